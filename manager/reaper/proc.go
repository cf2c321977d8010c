package reaper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"syscall"

	"github.com/shirou/gopsutil/v4/process"
)

// daemonMarker is what every browser-use 0.13 daemon's command line contains (python -m browser_harness.daemon).
const daemonMarker = "browser_harness.daemon"

// proc is what identifies a live process: its start time and whether it is a browser-use daemon.
type proc struct {
	start  int64 // ms since the epoch (gopsutil CreateTime)
	daemon bool  // command line names browser_harness.daemon
}

// inspect reports pid's identity, or ok=false when no live process has that pid. A zombie counts as dead: its
// program is gone, and under an init that never reaps (some containers) it would otherwise look alive forever.
// The reads are quick local ones and take no context, so a cancelled pass still identifies what it signals.
func inspect(pid int) (proc, bool) {
	ctx := context.Background()
	if pid <= 1 {
		return proc{}, false
	}
	p, err := process.NewProcessWithContext(ctx, int32(pid))
	if err != nil {
		return proc{}, false
	}
	start, err := p.CreateTimeWithContext(ctx)
	if err != nil {
		return proc{}, false
	}
	if st, err := p.StatusWithContext(ctx); err == nil && slices.Contains(st, process.Zombie) {
		return proc{}, false
	}
	cmd, err := p.CmdlineSliceWithContext(ctx)
	if err != nil {
		// The process exited between the reads, or is not ours to read: either way not a daemon we may stop.
		return proc{start: start}, true
	}
	return proc{start: start, daemon: strings.Contains(strings.Join(cmd, " "), daemonMarker)}, true
}

// errGone: the process exited (or its pid was reused) before the signal; nothing was sent.
var errGone = errors.New("process gone")

// signalIf sends sig to pid only if pid is still the daemon that started at start. The identity is read
// again right before the signal so that a pid freed and reused since the last look is never signalled; the
// window left is the few microseconds between that read and kill(2).
func signalIf(pid int, start int64, sig syscall.Signal) error {
	p, ok := inspect(pid)
	if !ok || !p.daemon || p.start != start {
		return errGone
	}
	if err := syscall.Kill(pid, sig); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return errGone
		}
		return fmt.Errorf("signal pid %d: %w", pid, err)
	}
	return nil
}

// alive reports whether pid is still the daemon that started at start.
func alive(pid int, start int64) bool {
	p, ok := inspect(pid)
	return ok && p.start == start
}
