// Package procid identifies a process by pid, start time and command line, so a reused pid is never taken
// for the process it once was, and waits for a child's exit without reaping it.
package procid

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shirou/gopsutil/v4/process"
)

// ErrNoProcess: no process with that pid exists.
var ErrNoProcess = errors.New("no such process")

// Info is what identifies a process.
type Info struct {
	Start   int64    // ms since the epoch, the same for every read of one process (startTime)
	Cmdline []string // empty for a zombie
	Zombie  bool     // exited but not reaped; its program is gone
}

// Inspect reads pid's start time, command line and zombie state. A zombie is reported, not refused: a
// parent may need the start time of its own unreaped child.
func Inspect(ctx context.Context, pid int) (Info, error) {
	if pid <= 0 {
		return Info{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return Info{}, fmt.Errorf("pid %d: %w", pid, ErrNoProcess)
	}
	start, err := startTime(ctx, p)
	if err != nil {
		return Info{}, fmt.Errorf("pid %d: start time: %w", pid, ErrNoProcess)
	}
	info := Info{Start: start}
	if st, err := p.StatusWithContext(ctx); err == nil && slices.Contains(st, process.Zombie) {
		info.Zombie = true
	}
	// A zombie has an empty command line; that is the answer, not an error.
	info.Cmdline, _ = p.CmdlineSliceWithContext(ctx)
	return info, nil
}

// Live reports whether pid is a running process, and its identity. A zombie counts as dead: its program is
// gone, and under an init that never reaps orphans (some containers, this project's CI) it would otherwise
// look alive forever.
func Live(ctx context.Context, pid int) (Info, bool) {
	info, err := Inspect(ctx, pid)
	if err != nil || info.Zombie {
		return info, false
	}
	return info, true
}

// LiveAs reports whether pid is running and started at start: the same process, not a reuse of its pid.
func LiveAs(ctx context.Context, pid int, start int64) bool {
	info, ok := Live(ctx, pid)
	return ok && info.Start == start
}
