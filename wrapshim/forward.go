package wrapshim

import "syscall"

// forwardedSignals are the signals the shim relays to the real CLI's process group (SPEC §3).
//
// A forwarder relays them to the process group of the child that is running. While none is (before the first
// child starts, between children, after the last), the shim dies of such a signal, or ignores it if it
// inherited it ignored: what the shim does with no handler of its own at all. A signal that comes while a
// child is being forked is either the shim's death, if the fork fails, or the child's, never lost between the
// two. Its methods: start forks a child and relays to its group; release, called once the child has exited
// and before it is reaped (so that its pid and group id cannot have been reused), ends the relaying.
//
// On linux/amd64 the forwarder is a signal handler of the shim's own (forward_handler_linux_amd64.go);
// elsewhere it is os/signal's (forward_notify.go).
var forwardedSignals = [...]syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
