package procid

import (
	"errors"

	"golang.org/x/sys/unix"
)

// WaitExited blocks until the caller's child pid has exited, without reaping it, so its pid (and process
// group id) stay reserved while the caller kills the rest of its group. It reports false if it could not
// wait.
func WaitExited(pid int) bool {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil
	}
}
