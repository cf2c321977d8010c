package wrapshim

import (
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// awaitChild waits until the child pid has exited, leaving it unreaped (until reap, its pid and group id
// cannot be reused, so signalling the group is never signalling a stranger), and bounds it: at timeout its
// process group gets SIGTERM, and SIGKILL a grace later. It reports whether the timeout fired.
//
// It waits in the kernel, polling the child's pidfd for the time left: a call that ends in time costs no
// timer and no goroutine (the first runtime timer sets up the runtime's network poller, and the deadline's
// kill would need a goroutine). Without pidfds (Linux before 5.3) the deadline's timers bound it.
func awaitChild(pid int, timeout, grace time.Duration) (timedOut bool) {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return awaitWithTimers(pid, timeout, grace)
	}
	defer unix.Close(pidfd)
	deadline := time.Now().Add(timeout)
	for _, sig := range [...]syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
		if pollExited(pid, pidfd, deadline) {
			return timedOut
		}
		timedOut = true
		_ = syscall.Kill(-pid, sig)
		deadline = time.Now().Add(grace)
	}
	pollExited(pid, pidfd, time.Time{}) // until the SIGKILL takes
	return true
}

// pollExited waits on the child's pidfd until the child has exited (true) or deadline has passed (false);
// a zero deadline waits without end.
func pollExited(pid, pidfd int, deadline time.Time) bool {
	fds := [1]unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		var wait *unix.Timespec
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return false
			}
			ts := unix.NsecToTimespec(left.Nanoseconds())
			wait = &ts
		}
		n, err := unix.Ppoll(fds[:], wait, nil)
		switch {
		case err == unix.EINTR: // a signal, relayed: wait on for the time left
		case err != nil: // not a pidfd after all (cannot happen): wait for the exit itself, unbounded
			waitExited(pid)
			return true
		case n > 0:
			return true
		}
	}
}

// awaitWithTimers is awaitChild bounded by the deadline's timers, for a kernel without pidfds.
func awaitWithTimers(pid int, timeout, grace time.Duration) (timedOut bool) {
	d := startDeadline(pid, timeout, grace)
	waitExited(pid)
	return d.stop()
}
