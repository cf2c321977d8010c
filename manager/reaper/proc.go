package reaper

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/shirou/gopsutil/v4/process"

	"vibebrowser/mux/sys/procid"
)

// daemonMarker is what every browser-use 0.13 daemon's command line contains (python -m browser_harness.daemon).
const daemonMarker = "browser_harness.daemon"

// proc is what identifies a live process: its start time, whether it is a browser-use daemon, and its user.
type proc struct {
	start  int64 // ms since the epoch (procid)
	daemon bool  // command line names browser_harness.daemon
	uid    int   // its real uid; -1 when its user ids are unknown or not all one
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
	return proc{start: info.Start, daemon: strings.Contains(strings.Join(info.Cmdline, " "), daemonMarker),
		uid: uidOf(pid)}, true
}

// uidOf is pid's uid when its real, effective and saved uids are one; -1 otherwise (a setuid program, or
// unreadable), which matches no folder's owner.
func uidOf(pid int) int {
	p, err := process.NewProcess(int32(pid))
	if err != nil {
		return -1
	}
	ids, err := p.Uids()
	if err != nil || len(ids) == 0 {
		return -1
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			return -1
		}
	}
	return int(ids[0])
}

// errGone: the process exited (or its pid was reused) before the signal; nothing was sent.
var errGone = errors.New("process gone")

// signalIf sends sig to pid only if pid is still the daemon of uid that started at start. The identity is
// read again right before the signal so that a pid freed and reused since the last look is never signalled;
// the window left is the few microseconds between that read and kill(2).
func signalIf(pid int, start int64, uid int, sig syscall.Signal) error {
	p, ok := inspect(pid)
	if !ok || !p.daemon || p.start != start || p.uid != uid {
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
