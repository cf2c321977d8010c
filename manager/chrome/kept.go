package chrome

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/keeper"
	"vibebrowser/mux/cdpwire"
	"vibebrowser/mux/sys/procid"
)

// A browser on the pipe (TransportPipe) is held by its keeper (package keeper): the keeper is the manager's
// child, in its own session, and Chromium the keeper's child, in its own process group. The keeper's identity
// file is its readiness and, for a later manager, what adoption checks.

// lingerBound is how long Chromium may outlive its keeper before its group is killed: with the pipe closed it
// exits by itself within a fraction of a second.
const lingerBound = 5 * time.Second

// keeperRef is the keeper holding a browser's pipe.
type keeperRef struct {
	pid    int
	start  int64
	socket string
	log    string // the keeper's and Chromium's stdout and stderr
}

// launchKept runs one attempt on the pipe: the keeper, started in its own session, is ready once its identity
// file names it. On failure the keeper and its browser are gone when it returns.
func launchKept(ctx context.Context, o Options, args []string, log zerolog.Logger) (*Process, []string, error) {
	if err := os.MkdirAll(o.RunDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("keeper run directory: %w", err)
	}
	idPath := keeper.IdentityPath(o.RunDir, o.Key)
	logPath := keeper.LogPath(o.RunDir, o.Key)
	if err := errors.Join(removeIfThere(idPath), removeIfThere(keeper.SocketPath(o.RunDir, o.Key)), removeIfThere(logPath)); err != nil {
		return nil, nil, fmt.Errorf("remove a stale keeper's files: %w", err)
	}
	// A fresh file, never through a name the folder's user left there (a symlink to a file of root's).
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_EXCL|os.O_WRONLY|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("keeper log: %w", err)
	}
	if o.User != nil {
		if err := out.Chown(o.User.UID, o.User.GID); err != nil {
			out.Close()
			return nil, nil, fmt.Errorf("keeper log: %w", err)
		}
	}
	argv := append(append([]string{}, o.Keeper[1:]...), keeper.Command(keeper.Config{
		Key: o.Key, RunDir: o.RunDir, Profile: o.ProfileDir, Binary: o.Binary, Args: args,
		ForwardPort: o.Identity.ForwardPort, ForwardStore: o.Identity.Store, OrphanStop: o.KeeperOrphanStop,
	})...)
	cmd := exec.Command(o.Keeper[0], argv...)
	cmd.Env = environ(o)
	cmd.Stdout, cmd.Stderr = out, out
	if o.Identity.Proxy != "" {
		cmd.Stdin = strings.NewReader(o.Identity.Proxy + "\n") // the forwarder's upstream: in no argv, no file
	}
	// Its own session: the manager's terminal and its signals never reach the keeper, which outlives it. As
	// the browser user it starts in its own folder: the manager's working folder may be closed to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Credential: credential(o.User)}
	if o.User != nil {
		cmd.Dir = o.RunDir
	}
	err = cmd.Start()
	out.Close()
	if err != nil {
		return nil, nil, fmt.Errorf("start keeper %s: %w", o.Keeper[0], err)
	}
	p := &Process{
		keeper:     &keeperRef{pid: cmd.Process.Pid, socket: keeper.SocketPath(o.RunDir, o.Key), log: logPath},
		profileDir: o.ProfileDir,
		log:        log,
		done:       make(chan struct{}),
	}
	if info, err := procid.Inspect(context.Background(), cmd.Process.Pid); err == nil {
		p.keeper.start = info.Start
	}
	p.wg.Add(1)
	go p.waitKeeper(cmd)

	fail := func(err error) (*Process, []string, error) {
		if kerr := p.killKept(); kerr != nil {
			err = fmt.Errorf("%w; teardown: %v", err, kerr)
		}
		return nil, p.Stderr(), err
	}
	uids := []int{os.Geteuid()}
	if o.User != nil {
		uids = []int{o.User.UID}
	}
	return awaitReady(ctx, o, p, fail, "its keeper wrote no identity", "keeper ", func(rctx context.Context) bool {
		id, err := keeper.ReadIdentity(idPath)
		if err != nil || id.KeeperPID != cmd.Process.Pid {
			return false
		}
		// The file is the keeper's user's to write: its browser is the keeper's own child before it is ours.
		if err := keptBrowser(rctx, id, uids); err != nil {
			log.Debug().Err(err).Msg("the keeper's identity does not hold yet")
			return false
		}
		p.setBrowser(id)
		return true
	})
}

// setBrowser records the browser the keeper started, before anyone else sees p.
func (p *Process) setBrowser(id keeper.Identity) {
	p.pid, p.start, p.pgid, p.useGroup = id.BrowserPID, id.BrowserStart, id.BrowserPGID, id.BrowserPGID > 1
}

// waitKeeper reaps the launched keeper and closes done: the keeper's end is the browser's, whose pipe it
// closed (Stop then sees the browser out, lingerBound at most).
func (p *Process) waitKeeper(cmd *exec.Cmd) {
	defer p.wg.Done()
	p.exitErr = cmd.Wait()
	close(p.done)
}

// awaitLinger waits, lingerBound at most, for a browser whose keeper is gone to exit by itself: with its
// pipe closed it does within a fraction of a second, and saves its session on the way.
func (p *Process) awaitLinger() {
	deadline := time.Now().Add(lingerBound)
	for groupAlive(p.pgid) && time.Now().Before(deadline) {
		time.Sleep(pollEvery)
	}
}

// keeperLive reports whether the keeper still runs: a launched one until it is reaped, an adopted one while
// its pid is the process that started at its recorded time.
func (p *Process) keeperLive() bool {
	if p.adopted {
		return procid.LiveAs(context.Background(), p.keeper.pid, p.keeper.start)
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// stopKept asks the keeper to stop its browser (SIGTERM: Browser.close, then its group's SIGTERM and SIGKILL,
// each bounded), then kills both when they outlast those bounds.
func (p *Process) stopKept(ctx context.Context) error {
	log := p.log.With().Int("pid", p.pid).Int("keeper_pid", p.keeper.pid).Logger()
	if ctx.Err() == nil && p.keeperLive() {
		if err := signalPID(p.keeper.pid, syscall.SIGTERM); err != nil {
			log.Warn().Err(err).Msg("keeper SIGTERM")
		}
		tctx, cancel := context.WithTimeout(ctx, closeBound+termBound+time.Second)
		p.waitGone(tctx)
		cancel()
		if p.gone() {
			log.Info().Msg("chromium stopped by its keeper")
			return nil
		}
		log.Warn().Msg("keeper did not stop its browser in time: killing both")
	}
	return p.killKept()
}

// killKept SIGKILLs the keeper and the browser's group and waits (bounded) until both are gone. A keeper that
// has not named its browser yet (a launch that never got ready) has it as its child, in a group of its own; a
// browser whose keeper is already gone gets lingerBound to exit by itself first.
func (p *Process) killKept() error {
	if p.keeperLive() {
		if !p.useGroup {
			for _, kid := range childPIDs(p.keeper.pid) {
				_ = signalGroup(kid, syscall.SIGKILL)
			}
		}
		_ = signalPID(p.keeper.pid, syscall.SIGKILL)
	} else if p.useGroup {
		p.awaitLinger()
	}
	if p.useGroup && groupAlive(p.pgid) {
		p.log.Warn().Int("pid", p.pid).Msg("chromium outlived its keeper: killing its process group")
		_ = signalGroup(p.pgid, syscall.SIGKILL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), killBound+lingerBound)
	defer cancel()
	if !p.waitGone(ctx) {
		return fmt.Errorf("keeper %d or chromium group %d still present after SIGKILL", p.keeper.pid, p.pgid)
	}
	return nil
}

// keptStderr is the last lines the keeper and its browser wrote.
func (p *Process) keptStderr() []string {
	f, err := keeper.OpenLog(p.keeper.log)
	if err != nil {
		return nil
	}
	defer f.Close()
	r := newRing()
	r.consume(f, zerolog.Nop())
	return r.snapshot()
}

// AdoptKept takes over a browser on the pipe that an earlier manager left running. Its identity is the
// keeper's identity file in runDir for key: of this format, naming this socket and profileDir, its browser the
// one recorded (pid and startTime), keeper and browser both alive with their recorded start times, the
// browser's command line naming the profile, and the keeper's socket answering with a hello from that keeper
// about that browser. Since the file is the keeper's to write, the process table must agree too (trust.go):
// keeper and browser run as a user runDir's files may name (keeperUsers: its owner), the browser the
// keeper's child, leading its own group. A failed check wraps ErrNotAdoptable and says which; nothing is
// signalled.
func AdoptKept(ctx context.Context, runDir, key string, pid int, startTime int64, profileDir string, log zerolog.Logger) (*Process, error) {
	profile, err := filepath.Abs(profileDir)
	if err != nil {
		return nil, fmt.Errorf("adopt pid %d: %w", pid, err)
	}
	notAdoptable := func(format string, a ...any) error {
		return fmt.Errorf("adopt pid %d: %s: %w", pid, fmt.Sprintf(format, a...), ErrNotAdoptable)
	}
	uids, err := keeperUsers(runDir)
	if err != nil {
		return nil, notAdoptable("the keeper's folder: %v", err)
	}
	socket := keeper.SocketPath(runDir, key)
	id, err := keeper.ReadIdentity(keeper.IdentityPath(runDir, key))
	switch {
	case err != nil:
		return nil, notAdoptable("no keeper identity: %v", err)
	case id.Socket != socket || !sameDir(id.Profile, profile):
		return nil, notAdoptable("the keeper's identity names socket %s and profile %s, want %s and %s (another home's keeper)", id.Socket, id.Profile, socket, profile)
	case id.BrowserPID != pid || id.BrowserStart != startTime:
		return nil, notAdoptable("the keeper holds browser pid %d started %d, the record says pid %d started %d (a stale file)", id.BrowserPID, id.BrowserStart, pid, startTime)
	case !procid.LiveAs(ctx, id.KeeperPID, id.KeeperStart):
		return nil, notAdoptable("keeper pid %d is not the process that started at %d (gone, or its pid reused)", id.KeeperPID, id.KeeperStart)
	}
	info, ok := procid.Live(ctx, pid)
	switch {
	case !ok:
		return nil, notAdoptable("not running")
	case info.Start != startTime:
		return nil, notAdoptable("start time %d, want %d (pid reused)", info.Start, startTime)
	case !namesProfile(info.Cmdline, profile):
		return nil, notAdoptable("command line does not name --user-data-dir=%s", profile)
	}
	if err := runsAs(ctx, id.KeeperPID, uids); err != nil {
		return nil, notAdoptable("keeper: %v", err)
	}
	if err := keptBrowser(ctx, id, uids); err != nil {
		return nil, notAdoptable("%v", err)
	}
	nc, hello, pipe, err := cdpwire.Dial(ctx, socket)
	if err != nil {
		return nil, notAdoptable("keeper socket: %v", err)
	}
	pipe.Close() // the pipe goes back to the keeper, for the mux to take
	nc.Close()
	if hello.PID != id.KeeperPID || hello.BrowserPID != pid {
		return nil, notAdoptable("the socket's keeper is pid %d holding browser %d, its identity file says %d holding %d", hello.PID, hello.BrowserPID, id.KeeperPID, pid)
	}
	p := &Process{
		keeper:     &keeperRef{pid: id.KeeperPID, start: id.KeeperStart, socket: socket, log: keeper.LogPath(runDir, key)},
		profileDir: profile,
		adopted:    true,
		log:        log.With().Str("profile", profile).Logger(),
		done:       make(chan struct{}),
		unwatch:    make(chan struct{}),
	}
	p.setBrowser(id)
	p.wg.Add(1)
	go p.watchAdopted()
	return p, nil
}

// StopStray stops the keeper of key in runDir that no manager adopted (its record lost, or naming another
// browser), with its browser, as Stop would: its pipe would otherwise hold the profile for ever. An identity
// file whose keeper is gone is removed with its socket. Only a keeper running as a user runDir's files may
// name (keeperUsers: its owner) is signalled, and its browser's group only when the process table agrees
// with the file (trust.go); a keeper of another user is an error and is left alone. It reports whether a
// keeper was stopped.
func StopStray(ctx context.Context, runDir, key string, log zerolog.Logger) (bool, error) {
	idPath := keeper.IdentityPath(runDir, key)
	id, err := keeper.ReadIdentity(idPath)
	if err != nil || !procid.LiveAs(ctx, id.KeeperPID, id.KeeperStart) {
		return false, errors.Join(removeIfThere(idPath), removeIfThere(keeper.SocketPath(runDir, key)))
	}
	uids, err := keeperUsers(runDir)
	if err != nil {
		return false, fmt.Errorf("stray keeper %d: its folder: %w", id.KeeperPID, err)
	}
	if err := runsAs(ctx, id.KeeperPID, uids); err != nil {
		return false, fmt.Errorf("stray keeper %d in %s not stopped: %w (its identity file names another's process)", id.KeeperPID, runDir, err)
	}
	p := &Process{
		keeper:  &keeperRef{pid: id.KeeperPID, start: id.KeeperStart, socket: id.Socket},
		adopted: true,
		log:     log,
		done:    make(chan struct{}),
	}
	p.setBrowser(id)
	if err := keptBrowser(ctx, id, uids); err != nil {
		// The keeper is ours to stop; a group the file names and the process table does not confirm is not.
		log.Warn().Err(err).Int("keeper_pid", id.KeeperPID).Msg("stray keeper: its browser's group is not signalled")
		p.pid, p.pgid, p.useGroup = 0, 0, false
	}
	return true, p.stopKept(ctx)
}

func removeIfThere(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
