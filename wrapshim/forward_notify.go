//go:build !(linux && amd64)

package wrapshim

import (
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
)

// forwarder relays the forwarded signals through os/signal (see forwardedSignals).
//
// It registers once, from its own goroutine started as the shim starts: a registration costs a round trip
// per signal with the runtime's signal-mask thread (which the first one starts), and that way the wait
// overlaps the config read and the manager's answer instead of adding to the call. For the same reason it is
// never stopped: stopping costs as much again, the shim exits right after its child, and the exit ends the
// goroutine.
type forwarder struct {
	sigs  chan os.Signal
	ready chan struct{} // closed once the signals are registered

	// ignored are the forwarded signals the shim inherited as ignored, read before the registration.
	ignored []os.Signal

	// mu guards pgid. It is held across the fork, so that a signal is either the shim's death before the
	// child exists or the child's, never lost between the two.
	mu   sync.Mutex
	pgid int // the running child's process group; 0 for none
}

// startForwarder registers the forwarded signals in the background and relays them from then on.
func startForwarder() *forwarder {
	// 4: a burst of distinct signals is relayed, not dropped.
	f := &forwarder{sigs: make(chan os.Signal, 4), ready: make(chan struct{})}
	go f.loop()
	return f
}

func (f *forwarder) loop() {
	sigs := make([]os.Signal, len(forwardedSignals))
	for i, sig := range forwardedSignals {
		sigs[i] = sig
		if signal.Ignored(sig) {
			f.ignored = append(f.ignored, sig)
		}
	}
	signal.Notify(f.sigs, sigs...)
	close(f.ready)
	for sig := range f.sigs {
		f.mu.Lock()
		if f.pgid == 0 {
			if !slices.Contains(f.ignored, sig) {
				die(sig) // with mu held: no child can start
			}
			f.mu.Unlock()
			continue
		}
		_ = syscall.Kill(-f.pgid, sig.(syscall.Signal))
		f.mu.Unlock()
	}
}

// die ends the shim by sig, as the runtime does for a signal nobody asked for.
func die(sig os.Signal) {
	signal.Reset(sig)
	_ = syscall.Kill(syscall.Getpid(), sig.(syscall.Signal))
	select {} // the signal is on its way
}

// start forks the child once the signals are registered, in a process group of its own, and relays the
// signals to that group until release.
func (f *forwarder) start(path string, argv []string, attr *syscall.ProcAttr) (int, error) {
	<-f.ready
	f.mu.Lock()
	defer f.mu.Unlock()
	pid, err := syscall.ForkExec(path, argv, attr)
	if err == nil {
		f.pgid = pid // Setpgid with a zero Pgid: the group is the child's pid
	}
	return pid, err
}

// release ends the relaying to the child's group.
func (f *forwarder) release() {
	f.mu.Lock()
	f.pgid = 0
	f.mu.Unlock()
}
