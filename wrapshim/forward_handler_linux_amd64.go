package wrapshim

import (
	"runtime"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// forwarder relays the forwarded signals with a signal handler of its own (forward_handler_linux_amd64.s),
// installed while a child runs: os/signal's first Notify starts a thread locked to a goroutine of its own and
// the runtime's template thread, and hands each signal over to that thread and back; on a call of a few
// milliseconds that was a millisecond of CPU and half a millisecond of wall time (issue 33). The handler
// runs on whichever thread the signal reaches, with no Go around it: it reads and writes only the three
// variables below, atomically, and makes only the kill system call.
type forwarder struct {
	saved [len(forwardedSignals)]sigaction // the actions the handler replaced, put back by release
}

// The handler's state. relayPgid is the running child's process group (0: none, the signal is held);
// relayPending has a bit per signal number received and not yet relayed; relayInflight counts the handlers
// running, so that release knows when none can still be signalling the group it ended.
var (
	relayPgid     int64
	relayPending  uint32
	relayInflight int32
)

// relayHandler and relayRestorer are the addresses of the handler and of the return from it
// (forward_handler_linux_amd64.s).
func relayHandler() uintptr
func relayRestorer() uintptr

// sigaction is the kernel's struct sigaction on linux/amd64.
type sigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// The sigaction flags the handler is installed with, as the runtime installs its own: its siginfo, on the
// thread's signal stack, interrupted system calls restarted, and the return through relayRestorer.
const (
	saSiginfo  = 0x4
	saRestorer = 0x4000000
	saOnstack  = 0x8000000
	saRestart  = 0x10000000
)

// startForwarder returns the shim's forwarder; it costs nothing until a child starts.
func startForwarder() *forwarder { return &forwarder{} }

// start installs the handler, forks the child in a process group of its own and relays the signals to that
// group until release. A signal that arrives during the fork is held and relayed once the group exists.
func (f *forwarder) start(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	act := sigaction{handler: relayHandler(), flags: saSiginfo | saOnstack | saRestart | saRestorer,
		restorer: relayRestorer(), mask: ^uint64(0)}
	for i, sig := range forwardedSignals {
		setSigaction(sig, &act, &f.saved[i])
	}
	pid, err := syscall.ForkExec(path, argv, attr)
	if err != nil {
		f.release()
		return pid, err
	}
	atomic.StoreInt64(&relayPgid, int64(pid)) // Setpgid with a zero Pgid: the group is the child's pid
	relay(pid, atomic.SwapUint32(&relayPending, 0))
	return pid, nil
}

// release ends the relaying: once no handler still holds the group, the shim's own actions are put back,
// and a signal that came meanwhile ends the shim as it would have without the forwarder.
func (f *forwarder) release() {
	atomic.StoreInt64(&relayPgid, 0)
	for atomic.LoadInt32(&relayInflight) != 0 {
		runtime.Gosched()
	}
	for i, sig := range forwardedSignals {
		setSigaction(sig, &f.saved[i], nil)
	}
	held := atomic.SwapUint32(&relayPending, 0)
	for _, sig := range forwardedSignals {
		if held&(1<<sig) != 0 {
			raise(sig)
		}
	}
}

// relay sends the pending signals to the group pgid, as the handler does.
func relay(pgid int, pending uint32) {
	for _, sig := range forwardedSignals {
		if pending&(1<<sig) != 0 {
			_ = syscall.Kill(-pgid, sig)
		}
	}
}

// raise delivers sig to the shim's own thread, where the action release put back handles it before the
// system call returns: the runtime's ends the shim by it; an inherited SIG_IGN ignores it.
func raise(sig syscall.Signal) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	_ = syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), sig)
}

// setSigaction sets sig's action to act (nil: unchanged), saving the previous one in old (nil: not saved).
func setSigaction(sig syscall.Signal, act, old *sigaction) {
	// Only an invalid signal number or address fails, and these are constants.
	_, _, _ = syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(act)),
		uintptr(unsafe.Pointer(old)), unsafe.Sizeof(act.mask), 0, 0)
}
