package chrome

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/mux/sys/osuser"
	"vibebrowser/mux/sys/procid"
)

// Launch defaults.
const (
	DefaultAttempts     = 3
	DefaultReadyTimeout = 30 * time.Second
)

// Transport is how the manager speaks to a launched Chromium (SPEC §13).
type Transport string

const (
	// TransportPipe: --remote-debugging-pipe, held by a keeper (package keeper); nothing of the browser
	// listens on TCP. The default.
	TransportPipe Transport = "pipe"
	// TransportPort: --remote-debugging-port=0 on loopback, for a Chromium build without pipe support; any
	// local process can reach it.
	TransportPort Transport = "port"
)

// Options describes one browser launch.
type Options struct {
	// Identity is the store's network identity (SPEC §16): its proxy (through the keeper's forwarder, so the
	// pipe only), time zone and language.
	Identity   Identity
	Binary     string // from Find
	ProfileDir string // --user-data-dir (created 0700); made absolute
	Headless   bool   // --headless (and --disable-gpu)
	// NoSandbox is --no-sandbox: the caller sets it only when Chromium runs as root (os.Geteuid()==0 and no
	// User). As any other user Chromium keeps its sandbox (user namespaces).
	NoSandbox bool
	// User, when set, is the store's browser user (SPEC §14), whom the browser runs as; the manager must be
	// root. On the pipe the keeper is started as User and starts Chromium as itself; on a port Chromium is.
	// Launch makes the profile User's (every file in it, when its top folder was someone else's) and RunDir
	// User's, both 0700, gives it HOME=<profile>/.home and none of the manager's own folders, and checks that
	// User may reach the binaries and folders. nil: the manager's own user, as before (a root manager takes
	// back a profile a former browser user owns).
	User *osuser.User
	// Transport is the DevTools transport; "" means TransportPipe.
	Transport Transport
	// Keeper is the command that runs a keeper (keeper.Main), e.g. the vibe-browser executable and "keep";
	// required on the pipe.
	Keeper []string
	// KeeperOrphanStop, on the pipe, is how long the keeper keeps the browser without a client before it
	// stops it (keeper.Config.OrphanStop); 0 keeps it for the next manager however long.
	KeeperOrphanStop time.Duration
	// RunDir and Key place the keeper's socket, identity file and log (keeper.SocketPath …); required on the
	// pipe.
	RunDir, Key string
	// ExtraArgs are appended to the command line. --user-data-dir, --remote-debugging-port(-pipe) and
	// --enable-automation are refused (ErrInvalid): the package owns them.
	ExtraArgs []string
	// Portable launches with Chromium's own password store rather than the OS keyring (portableFlags); false
	// only for a profile made before, launched once as it was (logins.PrepareProfile).
	Portable bool
	// ReadyTimeout bounds each attempt: on the pipe until the keeper's identity file names it (Chromium
	// answered a Browser.getVersion), on a port until DevToolsActivePort names a port whose /json/version
	// answers. Zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Attempts is how many launches are tried (on a port, each with a fresh one). Zero means
	// DefaultAttempts.
	Attempts int
	Log      zerolog.Logger
}

// Launch starts Chromium on o.ProfileDir in its own process group and returns once its DevTools endpoint
// answers: on the pipe through a keeper that it starts in its own session, on a port directly. Before launching it refuses a profile held by a live Chromium (*ProfileInUseError, nothing
// touched), clears stale Singleton* files, sets the profile to restore its previous session and deletes a
// stale DevToolsActivePort. A failed attempt (early exit, or not ready within ReadyTimeout) has its whole
// process group killed and is retried; when every attempt fails the error is a *LaunchError carrying the
// last stderr lines. Cancelling ctx kills the half-started group and returns an error wrapping ctx.Err().
// Callers must not launch the same profile concurrently (the manager holds the store's lock).
func Launch(ctx context.Context, o Options) (*Process, error) {
	if o.Binary == "" {
		return nil, fmt.Errorf("launch: no browser binary: %w", ErrInvalid)
	}
	if o.ProfileDir == "" {
		return nil, fmt.Errorf("launch: no profile dir: %w", ErrInvalid)
	}
	profile, err := filepath.Abs(o.ProfileDir)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	o.ProfileDir = profile
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = DefaultReadyTimeout
	}
	switch o.Transport {
	case "":
		o.Transport = TransportPipe
	case TransportPipe, TransportPort:
	default:
		return nil, fmt.Errorf("launch: transport %q: want %q or %q: %w", o.Transport, TransportPipe, TransportPort, ErrInvalid)
	}
	if o.Identity.Proxy != "" && (o.Transport != TransportPipe || o.Identity.ForwardPort <= 0) {
		return nil, fmt.Errorf("launch: a proxy needs the pipe, whose keeper runs its forwarder, and the forwarder's port: %w", ErrInvalid)
	}
	if o.Transport == TransportPipe && (len(o.Keeper) == 0 || o.RunDir == "" || o.Key == "") {
		return nil, fmt.Errorf("launch: the pipe needs a keeper command, a run directory and a key: %w", ErrInvalid)
	}
	if o.User != nil && os.Geteuid() != 0 {
		return nil, fmt.Errorf("launch: running the browser as user %s needs the manager to run as root: %w", o.User.Name, ErrInvalid)
	}
	args, err := buildArgs(o)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	if err := os.MkdirAll(profile, 0o700); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	own := filesOwner(o)
	if own != nil {
		if err := ownProfile(profile, *own); err != nil {
			return nil, fmt.Errorf("launch: the profile's owner: %w", err)
		}
	}
	log := o.Log.With().Str("profile", profile).Logger()
	if err := clearSingletons(profile); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	moved, err := prepareProfile(profile, own)
	if err != nil {
		return nil, fmt.Errorf("launch: %w: %v", ErrProfileUnready, err)
	}
	if o.User != nil {
		if err := ownDir(userHome(profile), *own); err != nil {
			return nil, fmt.Errorf("launch: the browser's HOME: %w", err)
		}
		if o.Transport == TransportPipe {
			if err := ownDir(o.RunDir, *own); err != nil {
				return nil, fmt.Errorf("launch: the keeper's folder: %w", err)
			}
		}
		if err := mayRun(o); err != nil {
			return nil, fmt.Errorf("launch: %w", err)
		}
	}
	if moved != "" {
		log.Warn().Str("moved_to", moved).Msg("unreadable Preferences moved aside; Chromium starts with defaults")
	}

	var lastErr error
	var lastStderr []string
	for i := 1; i <= o.Attempts; i++ {
		if i > 1 {
			// The killed attempt may have left its own Singleton* files and DevToolsActivePort behind.
			if err := clearSingletons(profile); err != nil {
				return nil, fmt.Errorf("launch: %w", err)
			}
		}
		if err := os.Remove(filepath.Join(profile, devToolsActivePort)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("launch: remove stale %s: %w", devToolsActivePort, err)
		}
		alog := log.With().Int("attempt", i).Logger()
		once := launchOnce
		if o.Transport == TransportPipe {
			once = launchKept
		}
		p, stderr, err := once(ctx, o, args, alog)
		if err == nil {
			alog.Info().Int("pid", p.pid).Str("endpoint", p.Endpoint()).Msg("chromium ready")
			return p, nil
		}
		lastErr, lastStderr = err, stderr
		if ctx.Err() != nil {
			return nil, &LaunchError{Attempts: i, Err: err, Stderr: stderr}
		}
		alog.Warn().Err(err).Msg("chromium launch attempt failed")
	}
	return nil, &LaunchError{Attempts: o.Attempts, Err: lastErr, Stderr: lastStderr}
}

// launchOnce runs one attempt. On failure the attempt's process group is gone when it returns, and the
// attempt's last stderr lines are returned with the error.
func launchOnce(ctx context.Context, o Options, args []string, log zerolog.Logger) (*Process, []string, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("stderr pipe: %w", err)
	}
	cmd := exec.Command(o.Binary, args...)
	cmd.Env = environ(o)
	cmd.Stdout = w
	cmd.Stderr = w
	// Own group: one signal reaches the browser and every helper it forks, and the manager's terminal
	// signals do not. As its user it starts in its HOME: the manager's working folder may be closed to it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: credential(o.User)}
	if o.User != nil {
		cmd.Dir = userHome(o.ProfileDir)
	}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, nil, fmt.Errorf("start %s: %w", o.Binary, err)
	}
	w.Close() // the child holds its copy; EOF comes when the group has exited

	p := &Process{
		pid:        cmd.Process.Pid,
		pgid:       cmd.Process.Pid,
		useGroup:   true,
		profileDir: o.ProfileDir,
		log:        log,
		stderr:     newRing(),
		done:       make(chan struct{}),
	}
	readerDone := make(chan struct{})
	p.wg.Add(2)
	go func() {
		defer p.wg.Done()
		defer close(readerDone)
		p.stderr.consume(r, log)
	}()
	go p.waitLaunched(cmd, r, readerDone)

	fail := func(err error) (*Process, []string, error) {
		if kerr := p.killGroup(); kerr != nil {
			err = fmt.Errorf("%w; teardown: %v", err, kerr)
		}
		<-p.done
		return nil, p.Stderr(), err
	}

	// Our unreaped child (or its zombie) is inspectable until the waiter reaps it; after an exec by a
	// wrapper script (Debian's /usr/bin/chromium) the start time is unchanged.
	info, err := procid.Inspect(context.Background(), p.pid) // quick; must not fail merely because ctx ended
	if err != nil {
		// A child that exited at once may be reaped already with its waiter yet to close done: only that
		// waiter takes our child out of the process table, so give it a moment before calling this a failure.
		select {
		case <-p.done:
			return nil, p.Stderr(), fmt.Errorf("%w at once: %v", ErrExited, exitText(p.exitErr))
		case <-time.After(reapedWait):
			return fail(fmt.Errorf("read start time: %w", err))
		}
	}
	p.start = info.Start

	return awaitReady(ctx, o, p, fail, "no answering DevToolsActivePort", "", func(rctx context.Context) bool {
		port, _, err := readDevToolsActivePort(o.ProfileDir)
		if err != nil {
			return false
		}
		v, err := fetchVersion(rctx, port)
		if err != nil {
			log.Debug().Err(err).Msg("DevTools not answering yet")
			return false
		}
		p.httpURL = "http://127.0.0.1:" + strconv.Itoa(port)
		p.wsURL = v.WebSocketDebuggerURL
		return true
	})
}

// awaitReady polls ready every pollEvery until it reports p's browser ready, p's process (exited, "keeper "
// when that is a keeper) exits first, or ReadyTimeout or ctx ends, when fail tears the attempt down;
// missing says what never came.
func awaitReady(ctx context.Context, o Options, p *Process, fail func(error) (*Process, []string, error),
	missing, exited string, ready func(context.Context) bool) (*Process, []string, error) {
	rctx, cancel := context.WithTimeout(ctx, o.ReadyTimeout)
	defer cancel()
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-rctx.Done():
			if ctx.Err() != nil {
				return fail(fmt.Errorf("launch cancelled: %w", ctx.Err()))
			}
			return fail(fmt.Errorf("chromium not ready within %s (%s)", o.ReadyTimeout, missing))
		case <-p.done:
			return nil, p.Stderr(), fmt.Errorf("%w before it was ready: %s%v", ErrExited, exited, exitText(p.exitErr))
		case <-t.C:
		}
		if ready(rctx) {
			return p, nil, nil
		}
	}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}
