// Package reaper stops orphaned browser-use daemons in a runtime directory this manager owns.
//
// browser-use 0.13 daemons (python -m browser_harness.daemon) detach from whoever started them and record
// themselves as bu-<BU_NAME>.pid and bu-<BU_NAME>.sock in BH_RUNTIME_DIR. Nothing else ever stops them, so a
// daemon whose task ended lives, and grows, until reboot. A pass reads every pid file and trusts it only as
// far as the process behind it proves: alive, not a zombie, its command line naming browser_harness.daemon
// and started no later than the pid file was written. Anything less means the file is stale (the daemon died,
// or its pid now belongs to another program) and only the files are removed. A proven daemon whose session
// name carries a task tail after a known slug is stopped (SIGTERM, a bounded wait, SIGKILL) when that task is
// no longer active; every other daemon is kept. A store that is an OS boundary keeps its daemons' files in its
// own folder of the runtime dir, its agent user's (places.go): those are read too, each proving a daemon of
// its folder's owner only.
package reaper

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
)

// MarkerName is the file the manager writes inside the runtime dir when it creates it; a dir without it is
// someone else's (an inherited BH_RUNTIME_DIR, another home's manager) and is never swept.
const MarkerName = ".vibe-browser-runtime"

// Defaults for the zero values of Config's bounds.
const (
	DefaultMaxKills = 20
	DefaultMaxTime  = 10 * time.Second
	DefaultTermWait = 3 * time.Second
)

// ErrNotOwned: the runtime dir lacks this manager's marker, so the reaper refuses to touch it.
var ErrNotOwned = errors.New("runtime dir not owned by this manager")

const (
	// startSlack absorbs the rounding in a process's start time (Linux derives it from a boot time in whole
	// seconds) when comparing it with the pid file's mtime.
	startSlack = time.Second
	// writeGrace: an unreadable pid file younger than this may be one a daemon is still writing.
	writeGrace = 5 * time.Second
	// killWait bounds the wait for a SIGKILLed daemon to disappear. A killed process acts on the signal only
	// when it next leaves the kernel: one paging its program in under heavy disk load (a CI build beside it)
	// was seen still there after 2 s. The wait ends as soon as every daemon is gone.
	killWait = 10 * time.Second
	// pollEvery is how often a wait looks at the signalled daemons.
	pollEvery = 25 * time.Millisecond
)

// Claim makes dir this manager's runtime dir when it can. If dir does not exist it is created (0700) with the
// marker inside and owned is true. If dir exists, owned is true only when it is a directory of this user
// holding the marker: a dir this manager did not create is never claimed.
func Claim(dir string) (owned bool, err error) {
	if dir == "" {
		return false, errors.New("claim runtime dir: empty path")
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return false, fmt.Errorf("claim runtime dir: %w", err)
	}
	err = os.Mkdir(dir, 0o700)
	if errors.Is(err, fs.ErrExist) {
		return owns(dir)
	}
	if err != nil {
		return false, fmt.Errorf("claim runtime dir: %w", err)
	}
	if err := writeMarker(dir); err != nil {
		// Leave no marker-less dir of ours behind: it would never be claimable again.
		os.Remove(dir)
		return false, fmt.Errorf("claim runtime dir: %w", err)
	}
	return true, nil
}

func writeMarker(dir string) error {
	f, err := os.OpenFile(filepath.Join(dir, MarkerName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "created by vibe-browser pid %d at %s; its daemon reaper sweeps this dir\n",
		os.Getpid(), time.Now().UTC().Format(time.RFC3339))
	return errors.Join(err, f.Close())
}

// owns reports whether dir is a directory of this user with the marker in it.
func owns(dir string) (bool, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return false, fmt.Errorf("runtime dir: %w", err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("runtime dir %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return false, nil
	}
	mi, err := os.Lstat(filepath.Join(dir, MarkerName))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("runtime dir marker: %w", err)
	}
	return mi.Mode().IsRegular(), nil
}

// Config is one reaper's setup. The zero values of the bounds mean their defaults.
type Config struct {
	Dir      string                  // BH_RUNTIME_DIR ($VIBE_HOME/r); must hold the marker; its <slug>/ folders are read too
	Slugs    func() []string         // known store slugs; "web" is always known; nil means none
	Active   func(task8 string) bool // whether the task whose id starts with task8 is active; required by Pass
	MaxKills int                     // daemons signalled per pass (DefaultMaxKills); the rest wait for the next pass
	MaxTime  time.Duration           // time spent examining pid files per pass (DefaultMaxTime)
	TermWait time.Duration           // SIGTERM → SIGKILL wait (DefaultTermWait)
	Log      zerolog.Logger
}

func (c Config) withDefaults() Config {
	if c.MaxKills <= 0 {
		c.MaxKills = DefaultMaxKills
	}
	if c.MaxTime <= 0 {
		c.MaxTime = DefaultMaxTime
	}
	if c.TermWait <= 0 {
		c.TermWait = DefaultTermWait
	}
	return c
}

// Result lists the session names (BU_NAMEs) a pass acted on: Killed daemons were signalled and are gone,
// Removed pid files were stale (their sockets went with them), Kept daemons are alive and stay. A daemon left
// for the next pass by MaxKills or MaxTime is in none of the lists.
type Result struct{ Killed, Removed, Kept []string }

// Pass runs one reaper pass over cfg.Dir. It refuses (ErrNotOwned) a dir without the marker. Examining pid
// files is bounded by MaxTime; stopping the chosen daemons then takes at most TermWait plus killWait (the
// wait after SIGKILL), because the daemons are signalled together, not one after another. Errors about single
// daemons are joined and returned with the result; a cancelled ctx ends the pass early with ctx.Err().
func Pass(ctx context.Context, cfg Config) (Result, error) {
	if cfg.Active == nil {
		return Result{}, errors.New("reaper: Config.Active is required")
	}
	slugs := knownSlugs(cfg)
	return run(ctx, cfg.withDefaults(), func(name string) bool { return true }, func(task8 string) bool {
		return !cfg.Active(task8)
	}, slugs)
}

// StopTask stops every daemon of one task now (the task ended): its main session and worker slots, under
// any slug, web included. Stale pid files of that task are removed; other names are not looked at. The
// identity checks, the marker check and the bounds are those of Pass.
func StopTask(ctx context.Context, cfg Config, task8 string) (Result, error) {
	if len(task8) != 8 || !isHex(task8) {
		return Result{}, fmt.Errorf("reaper: task prefix %q is not 8 hex characters", task8)
	}
	slugs := knownSlugs(cfg)
	ofTask := func(name string) bool {
		_, t, _, ok := ParseName(name, slugs)
		return ok && strings.EqualFold(t, task8)
	}
	return run(ctx, cfg.withDefaults(), ofTask, func(string) bool { return true }, slugs)
}

func knownSlugs(cfg Config) []string {
	if cfg.Slugs == nil {
		return nil
	}
	return cfg.Slugs()
}

// pidFile is one bu-<name>.pid as it was read.
type pidFile struct {
	name      string
	pidPath   string
	sockPath  string
	data      []byte
	mtime     time.Time
	pid       int
	start     int64 // of the live daemon, ms since the epoch
	uid       int   // the user the daemon must run as: the owner of the pid file's folder
	signalled bool
}

// run is a pass over the pid files whose names mine accepts; stop decides, for a live daemon with a task
// tail, whether it goes.
func run(ctx context.Context, cfg Config, mine func(name string) bool, stop func(task8 string) bool, slugs []string) (Result, error) {
	var res Result
	log := cfg.Log
	ok, err := owns(cfg.Dir)
	if err != nil {
		return res, err
	}
	if !ok {
		return res, fmt.Errorf("reaper: %s has no %s: %w", cfg.Dir, MarkerName, ErrNotOwned)
	}
	entries, err := pidFiles(cfg.Dir, slugs)
	if err != nil {
		return res, fmt.Errorf("reaper: %w", err)
	}
	deadline := time.Now().Add(cfg.MaxTime)
	var targets []*pidFile
	var errs []error
	deferred := 0
	for i, e := range entries {
		name := e.name
		if !mine(name) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if time.Now().After(deadline) {
			log.Info().Dur("max_time_ms", cfg.MaxTime).Int("entries_left", len(entries)-i).
				Msg("reaper pass time bound reached; the rest waits for the next pass")
			break
		}
		pf, live, err := examine(e.place, name, log)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if pf == nil {
			continue
		}
		if !live {
			if removeFiles(pf, log) {
				res.Removed = append(res.Removed, name)
			}
			continue
		}
		slug, task8, worker, parsed := ParseName(name, slugs)
		plog := log.With().Str("session", name).Int("pid", pf.pid).Logger()
		switch {
		case !api.ValidBUName(name) || !parsed:
			plog.Info().Msg("reaper keeps a daemon whose session name fits no known store")
			res.Kept = append(res.Kept, name)
		case task8 == "" || !stop(task8):
			plog.Debug().Str("slug", slug).Str("task", task8).Msg("reaper keeps daemon")
			res.Kept = append(res.Kept, name)
		case len(targets) >= cfg.MaxKills:
			deferred++
		default:
			plog.Info().Str("slug", slug).Str("task", task8).Int("worker", worker).Msg("stopping daemon of an inactive task")
			targets = append(targets, pf)
		}
	}
	if deferred > 0 {
		log.Info().Int("max_kills", cfg.MaxKills).Int("deferred", deferred).
			Msg("reaper pass kill bound reached; the rest waits for the next pass")
	}
	killed, removed, err := stopAll(ctx, cfg.TermWait, targets, log)
	res.Killed = append(res.Killed, killed...)
	res.Removed = append(res.Removed, removed...)
	errs = append(errs, err)
	return res, errors.Join(errs...)
}

// examine reads one pid file and the process it names. pf is nil when there is nothing to do (the file went
// away, or it is young and not yet readable); live reports a proven daemon, of the user its place proves.
func examine(pl place, name string, log zerolog.Logger) (pf *pidFile, live bool, err error) {
	pf = &pidFile{
		name:     name,
		pidPath:  filepath.Join(pl.dir, "bu-"+name+".pid"),
		sockPath: filepath.Join(pl.dir, "bu-"+name+".sock"),
		uid:      pl.uid,
	}
	pf.data, pf.mtime, err = readStamped(pf.pidPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reaper: %w", err)
	}
	plog := log.With().Str("session", name).Logger()
	pid, err := strconv.Atoi(string(bytes.TrimSpace(pf.data)))
	if err != nil || pid <= 1 {
		if time.Since(pf.mtime) < writeGrace {
			return nil, false, nil
		}
		plog.Info().Msg("removing unreadable daemon pid file")
		return pf, false, nil
	}
	pf.pid = pid
	plog = plog.With().Int("pid", pid).Logger()
	p, ok := inspect(pid)
	switch {
	case !ok:
		plog.Info().Msg("removing pid file of a daemon that is gone")
		return pf, false, nil
	case !p.daemon:
		plog.Info().Msg("removing pid file whose pid now belongs to another program")
		return pf, false, nil
	case p.uid != pl.uid:
		plog.Info().Int("uid", p.uid).Int("folder_uid", pl.uid).
			Msg("removing pid file that names another user's process: a pid file proves a daemon of its folder's owner only")
		return pf, false, nil
	case time.UnixMilli(p.start).After(pf.mtime.Add(startSlack)):
		plog.Info().Time("started", time.UnixMilli(p.start)).Time("pid_file", pf.mtime).
			Msg("removing pid file older than the process holding its pid (pid reused)")
		return pf, false, nil
	}
	pf.start = p.start
	return pf, true, nil
}

// readStamped reads a file with its mtime. A store's own folder is its agent user's, and the reaper may be
// root: a symlink there is not followed and a FIFO not waited on, so anything but a regular file is an error.
func readStamped(path string) ([]byte, time.Time, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, time.Time{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, time.Time{}, err
	}
	if !fi.Mode().IsRegular() {
		return nil, time.Time{}, fmt.Errorf("%s is not a regular file", path)
	}
	// A pid file is a few bytes; anything much larger is not one and need not be read whole.
	buf := make([]byte, 64)
	n, err := f.Read(buf)
	if err != nil && n == 0 && fi.Size() > 0 {
		return nil, time.Time{}, err
	}
	return buf[:n], fi.ModTime(), nil
}

// removeFiles removes pf's pid file and socket, unless the pid file changed since it was read: then a new
// daemon has taken the name and both files are its own.
func removeFiles(pf *pidFile, log zerolog.Logger) bool {
	data, mtime, err := readStamped(pf.pidPath)
	if errors.Is(err, fs.ErrNotExist) {
		// The daemon removed its own pid file on the way out; a socket it left is replaced by the next one.
		return true
	}
	if err != nil || !bytes.Equal(data, pf.data) || !mtime.Equal(pf.mtime) {
		log.Info().Str("session", pf.name).Msg("pid file rewritten meanwhile; leaving it to its new daemon")
		return false
	}
	for _, p := range []string{pf.pidPath, pf.sockPath} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Warn().Err(err).Str("session", pf.name).Msg("remove daemon file")
		}
	}
	return true
}

// stopAll sends SIGTERM to every target, waits up to termWait for them all to exit, sends SIGKILL to the
// survivors and waits again briefly. Each signal first checks that the pid is still the daemon it was.
func stopAll(ctx context.Context, termWait time.Duration, targets []*pidFile, log zerolog.Logger) (killed, removed []string, err error) {
	if len(targets) == 0 {
		return nil, nil, nil
	}
	var errs []error
	signal := func(sig syscall.Signal) {
		for _, t := range targets {
			if !alive(t.pid, t.start) {
				continue
			}
			switch err := signalIf(t.pid, t.start, t.uid, sig); {
			case err == nil:
				t.signalled = true
			case !errors.Is(err, errGone):
				errs = append(errs, fmt.Errorf("reaper: stop %s: %w", t.name, err))
			}
		}
	}
	signal(syscall.SIGTERM)
	if err := waitGone(ctx, termWait, targets); err != nil {
		return collect(targets, log, &errs), nil, err
	}
	signal(syscall.SIGKILL)
	if err := waitGone(ctx, killWait, targets); err != nil {
		return collect(targets, log, &errs), nil, err
	}
	for _, t := range targets {
		if !t.signalled && !alive(t.pid, t.start) && removeFiles(t, log) {
			removed = append(removed, t.name)
		}
	}
	return collect(targets, log, &errs), removed, errors.Join(errs...)
}

// collect removes the files of the signalled daemons that are gone and names them; one still alive is an error.
func collect(targets []*pidFile, log zerolog.Logger, errs *[]error) (killed []string) {
	for _, t := range targets {
		if !t.signalled {
			continue
		}
		if alive(t.pid, t.start) {
			*errs = append(*errs, fmt.Errorf("reaper: daemon %s (pid %d) still running after SIGKILL", t.name, t.pid))
			continue
		}
		removeFiles(t, log)
		killed = append(killed, t.name)
	}
	return killed
}

// waitGone polls until no target is alive, within, or ctx ends (its error is returned).
func waitGone(ctx context.Context, within time.Duration, targets []*pidFile) error {
	timer := time.NewTimer(within)
	defer timer.Stop()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		done := true
		for _, t := range targets {
			if alive(t.pid, t.start) {
				done = false
				break
			}
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return nil
		case <-tick.C:
		}
	}
}
