package wrapshim

import (
	"sync/atomic"
	"syscall"
	"testing"
)

// TestForwarderRelaysAHeldSignal: a signal that reached the handler before the child's group existed (the
// fork) is relayed to the group once it does, once.
func TestForwarderRelaysAHeldSignal(t *testing.T) {
	f := startForwarder()
	atomic.OrUint32(&relayPending, 1<<syscall.SIGTERM) // as the handler holds a SIGTERM during the fork
	pid, err := f.start("/bin/sleep", []string{"sleep", "60"}, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		t.Skipf("cannot start /bin/sleep: %v", err)
	}
	waitExited(pid)
	f.release()
	ws, err := reap(pid)
	if err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("child ended with %v, %v; want SIGTERM, relayed at the fork", ws, err)
	}
	if held := atomic.LoadUint32(&relayPending); held != 0 {
		t.Errorf("relayPending = %b after the relay; want none held", held)
	}
}

// TestForwarderRelaysToTheGroup: a signal to the shim while the child runs reaches the child's group through
// the handler, and the shim's own action is back once the forwarder is released.
func TestForwarderRelaysToTheGroup(t *testing.T) {
	var before sigaction
	setSigaction(syscall.SIGHUP, nil, &before)
	f := startForwarder()
	pid, err := f.start("/bin/sleep", []string{"sleep", "60"}, &syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		t.Skipf("cannot start /bin/sleep: %v", err)
	}
	// To this thread: the handler runs before the call returns, the test's own process untouched.
	if err := syscall.Tgkill(syscall.Getpid(), syscall.Gettid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitExited(pid)
	f.release()
	ws, err := reap(pid)
	if err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGHUP {
		t.Errorf("child ended with %v, %v; want SIGHUP, relayed", ws, err)
	}
	var after sigaction
	setSigaction(syscall.SIGHUP, nil, &after)
	if after != before {
		t.Errorf("SIGHUP's action after release = %+v; want the one before, %+v", after, before)
	}
}
