package chrome

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// namesProfile reports whether a command line passes --user-data-dir=<profileDir>.
func namesProfile(cmdline []string, profileDir string) bool {
	for _, a := range cmdline {
		v, ok := strings.CutPrefix(a, "--user-data-dir=")
		if ok && sameDir(v, profileDir) {
			return true
		}
	}
	return false
}

// sameDir compares two directory paths lexically, then through symlinks.
func sameDir(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// signalGroup sends sig to process group pgid; an already-empty group is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	if pgid <= 1 {
		// -1 would signal every process we may signal; 0 our own group. Never.
		return fmt.Errorf("refusing to signal process group %d", pgid)
	}
	if err := unix.Kill(-pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal group %d: %w", pgid, err)
	}
	return nil
}

// signalPID sends sig to one process; an already-gone process is not an error.
func signalPID(pid int, sig syscall.Signal) error {
	if pid <= 1 {
		return fmt.Errorf("refusing to signal pid %d", pid)
	}
	if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", pid, err)
	}
	return nil
}
