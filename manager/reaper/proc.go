package reaper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"vibebrowser/manager/procid"
)

// daemonMarker is what every browser-use 0.13 daemon's command line contains (python -m browser_harness.daemon).
const daemonMarker = "browser_harness.daemon"

// proc is what identifies a live process: its start time and whether it is a browser-use daemon.
type proc struct {
	start  int64 // ms since the epoch (procid)
	daemon bool  // command line names browser_harness.daemon
}

// inspect reports pid's identity, or ok=false when no live process has that pid (a zombie counts as dead).
// The reads are quick local ones and take no context, so a cancelled pass still identifies what it signals.
func inspect(pid int) (proc, bool) {
	if pid <= 1 {
		return proc{}, false
	}
	info, ok := procid.Live(context.Background(), pid)
	if !ok {
		return proc{}, false
	}
	// An empty command line (the process exited between the reads, or is not ours to read) is not a daemon
	// we may stop.
	return proc{start: info.Start, daemon: strings.Contains(strings.Join(info.Cmdline, " "), daemonMarker)}, true
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
