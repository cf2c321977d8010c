package chrome

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strconv"

	"vibebrowser/mux/sys/procid"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// Adopt takes over a browser left running by an earlier manager. Its identity is: pid alive (not a zombie),
// start time equal to startTime (ms, procid), command line naming --user-data-dir=<profileDir>,
// and CDP answering on the endpoint in the profile's DevToolsActivePort with the websocket path that file
// names. Any failed check is an error wrapping ErrNotAdoptable that says which check failed; nothing is
// signalled. The returned Process reports Adopted() == true; Done polls its liveness until Release or exit.
// log is the returned Process's logger (its Stop), as Options.Log is a launched one's.
func Adopt(ctx context.Context, pid int, startTime int64, profileDir string, log zerolog.Logger) (*Process, error) {
	profile, err := filepath.Abs(profileDir)
	if err != nil {
		return nil, fmt.Errorf("adopt pid %d: %w", pid, err)
	}
	info, err := procid.Inspect(ctx, pid)
	if err != nil {
		return nil, fmt.Errorf("adopt pid %d: not running: %w", pid, ErrNotAdoptable)
	}
	if info.Zombie {
		return nil, fmt.Errorf("adopt pid %d: not running (zombie): %w", pid, ErrNotAdoptable)
	}
	if info.Start != startTime {
		return nil, fmt.Errorf("adopt pid %d: start time %d, want %d (pid reused): %w", pid, info.Start, startTime, ErrNotAdoptable)
	}
	if !namesProfile(info.Cmdline, profile) {
		return nil, fmt.Errorf("adopt pid %d: command line does not name --user-data-dir=%s: %w", pid, profile, ErrNotAdoptable)
	}
	port, wsPath, err := readDevToolsActivePort(profile)
	if err != nil {
		return nil, fmt.Errorf("adopt pid %d: CDP endpoint unknown: %v: %w", pid, err, ErrNotAdoptable)
	}
	v, err := fetchVersion(ctx, port)
	if err != nil {
		return nil, fmt.Errorf("adopt pid %d: CDP not answering: %v: %w", pid, err, ErrNotAdoptable)
	}
	if u, err := url.Parse(v.WebSocketDebuggerURL); err != nil || (wsPath != "" && u.Path != wsPath) {
		return nil, fmt.Errorf("adopt pid %d: port %d answers for another browser (%s, want path %s): %w", pid, port, v.WebSocketDebuggerURL, wsPath, ErrNotAdoptable)
	}
	pgid, err := unix.Getpgid(pid)
	if err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil, fmt.Errorf("adopt pid %d: exited during adoption: %w", pid, ErrNotAdoptable)
		}
		return nil, fmt.Errorf("adopt pid %d: process group: %w", pid, err)
	}
	p := &Process{
		pid:        pid,
		pgid:       pgid,
		useGroup:   pgid == pid, // only a group it leads is its own; never signal a stranger's group
		start:      startTime,
		profileDir: profile,
		httpURL:    "http://127.0.0.1:" + strconv.Itoa(port),
		wsURL:      v.WebSocketDebuggerURL,
		adopted:    true,
		log:        log.With().Str("profile", profile).Logger(),
		done:       make(chan struct{}),
		unwatch:    make(chan struct{}),
	}
	p.wg.Add(1)
	go p.watchAdopted()
	return p, nil
}
