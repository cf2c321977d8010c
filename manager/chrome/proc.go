package chrome

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"
)

// procInfo is what identifies a process: its start time and command line.
type procInfo struct {
	start   int64 // ms since epoch (gopsutil CreateTime)
	cmdline []string
	zombie  bool
}

// errNoProcess: no process with that pid exists.
var errNoProcess = errors.New("no such process")

// inspect reads pid's start time, command line and zombie state.
func inspect(ctx context.Context, pid int) (procInfo, error) {
	if pid <= 0 {
		return procInfo{}, fmt.Errorf("pid %d: %w", pid, errNoProcess)
	}
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return procInfo{}, fmt.Errorf("pid %d: %w", pid, errNoProcess)
	}
	start, err := p.CreateTimeWithContext(ctx)
	if err != nil {
		return procInfo{}, fmt.Errorf("pid %d: start time: %w", pid, errNoProcess)
	}
	var info procInfo
	info.start = start
	if st, err := p.StatusWithContext(ctx); err == nil && slices.Contains(st, process.Zombie) {
		info.zombie = true
	}
	// A zombie has an empty command line; that is the answer, not an error.
	info.cmdline, _ = p.CmdlineSliceWithContext(ctx)
	return info, nil
}

// live reports whether pid is a running (non-zombie) process. A zombie counts as dead: its program is gone,
// and under an init that never reaps (some containers) it would otherwise look alive forever.
func live(ctx context.Context, pid int) (procInfo, bool) {
	info, err := inspect(ctx, pid)
	if err != nil || info.zombie {
		return info, false
	}
	return info, true
}

// liveAs reports whether pid is running and started at start: the same process, not a reuse of its pid.
func liveAs(ctx context.Context, pid int, start int64) bool {
	info, ok := live(ctx, pid)
	return ok && info.start == start
}

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
