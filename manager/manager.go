package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/gofrs/flock"
	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/notify"
	"vibebrowser/manager/reaper"
	"vibebrowser/manager/timeline"
	"vibebrowser/manager/ui"
	"vibebrowser/state"
)

// Manager is the running daemon: its state, browsers and API.
type Manager struct {
	cfg     *Config
	root    zerolog.Logger // without a component: each component's logger derives from it
	log     zerolog.Logger // the manager's own
	db      *state.DB
	metrics *metrics
	version string

	ctx         context.Context // the daemon's life: a handoff wait ends with it
	ownsRuntime bool            // the runtime dir carries our marker: the reaper may act in it

	fleet *browsers.Fleet // every browser: its slot, lifecycle, mux and endpoint

	events   eventLog       // the recent events (note)
	ui       *ui.Server     // the web UI; nil when VIBE_UI_ADDR=off
	handoffs *handoffDesk   // the handoffs: answers, waits, expiry (handoffs.go)
	notify   *notify.Sender // POSTs the events that need a person to VIBE_NOTIFY_URL (manager/notify)

	leaseMu sync.Mutex           // leaseMu guards leased
	leased  map[string]leaseMark // task id -> the lease touchTask last wrote

	exitIPs *exitIPs // each proxied store's exit IP, checked through its proxy (VIBE_PROXY_CHECK_URL)

	downloaded downloadQuota // what each task's downloads take, for VIBE_DOWNLOAD_MAX_MB (downloads.go)

	timeline *timeline.Recorder // what each task did (SPEC §15)
}

// newManager assembles a manager on an open state database; Run serves it. root is the daemon's root
// logger, without a component: each component's logger derives from it.
func newManager(ctx context.Context, cfg *Config, root zerolog.Logger, db *state.DB, version string) *Manager {
	m := &Manager{cfg: cfg, root: root, log: root.With().Str("component", "manager").Logger(), db: db,
		version: version, ctx: ctx, leased: map[string]leaseMark{},
		exitIPs: &exitIPs{ctx: ctx, url: cfg.ProxyCheckURL, seen: map[string]exitIP{}}}
	m.fleet = browsers.New(ctx, cfg.browsers(), db, root, browsers.Hooks{Note: m.note,
		Starting: m.writeWrapperFor, Downloaded: m.recordDownload, DownloadRoom: m.downloadRoom,
		DownloadCut: m.downloadCut, Timeline: m.tabStep})
	m.timeline = m.newTimeline()
	m.metrics = newMetrics(m.fleet.Collectors()...)
	m.handoffs = &handoffDesk{db: db, log: m.log, ctx: ctx, note: m.note, renew: m.touchTask, uiLink: m.uiLink}
	m.notify = notify.New(cfg.NotifyURL, root.With().Str("component", "notify").Logger(), m.describeEvent)
	m.metrics.registry.MustRegister(append(m.notify.Collectors(), newHandoffMetrics(db))...)
	return m
}

// Run is `vibe-browser serve`: it holds the home's lock, serves the API on its socket and runs until ctx
// ends, then passes the quit barrier. log is the root logger; every component derives its own from it. The
// caller installs signal handling before calling Run (a first signal cancels ctx; a second exits at once).
func Run(ctx context.Context, cfg *Config, log zerolog.Logger, version string) error {
	for _, dir := range []string{cfg.Home, cfg.path("run"), cfg.path("bin"), cfg.path("bh-tmp"),
		cfg.path("profiles"), cfg.path("downloads")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	lockPath := cfg.path("run", "manager.lock")
	lock := flock.New(lockPath, flock.SetPermissions(0o600))
	ok, err := lock.TryLock()
	if err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if !ok {
		holder, _ := os.ReadFile(lockPath + ".pid")
		return fmt.Errorf("another manager is running for %s (pid %s holds %s); one manager per home",
			cfg.Home, strings.TrimSpace(string(holder)), lockPath)
	}
	defer lock.Close()
	_ = os.WriteFile(lockPath+".pid", []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)

	// Everything bound during start-up is released when the start fails: no half-started manager. Once
	// serving, the servers close their own listeners.
	var bound []io.Closer
	serving := false
	defer func() {
		if !serving {
			for _, c := range bound {
				c.Close()
			}
		}
	}()
	uiLn, err := listenUI(cfg)
	if err != nil {
		return err
	}
	if uiLn != nil {
		bound = append(bound, uiLn)
	}
	ln, err := listenSocket(cfg.socketPath(), log)
	if err != nil {
		return err
	}
	bound = append(bound, ln)
	agentLn, err := listenAgents(api.AgentSocketPath(cfg.Home))
	if err != nil {
		return err
	}
	bound = append(bound, agentLn)
	db, err := state.Open(cfg.path("state.db"))
	if err != nil {
		if errors.Is(err, syscall.EROFS) || errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("%w; the manager keeps its state there and must write it: make it writable "+
				"(remount the disk read-write, fix the owner), or set VIBE_HOME to a writable directory", err)
		}
		return err
	}
	defer db.Close()

	m := newManager(ctx, cfg, log, db, version)
	log = m.log
	if err := m.checkUsersRunnable(ctx); err != nil {
		return err
	}
	// The runtime dir is created by Claim, with the marker that lets the reaper act in it; a dir someone
	// else made is used but never swept.
	if m.ownsRuntime, err = reaper.Claim(cfg.path("r")); err != nil {
		return err
	}
	if !m.ownsRuntime {
		log.Warn().Str("dir", cfg.path("r")).Msg("runtime dir was not created by a vibe-browser manager: the daemon reaper stays off")
	}
	if cfg.BrowserUse == "" {
		log.Warn().Str("problem", cfg.BrowserUseProblem).Msg("no real browser-use CLI: wrappers are not written and ensure refuses")
	}
	if uiLn != nil {
		m.ui = m.newUI(uiLn)
	}
	if err := m.boot(ctx); err != nil {
		m.fleet.Quit(true) // what was adopted keeps running for the next manager
		return fmt.Errorf("boot: %w", err)
	}
	serving = true
	loops, stopLoops := context.WithCancel(ctx)
	var loopsDone sync.WaitGroup
	loopsDone.Go(func() { m.idleLoop(loops) })
	loopsDone.Go(func() { m.fleet.Snapshots().Loop(loops) })
	loopsDone.Go(func() { m.reapLoop(loops) })
	loopsDone.Go(func() { m.leaseLoop(loops) })
	loopsDone.Go(func() { m.handoffs.loop(loops) })
	notifyCtx, stopNotify := context.WithCancel(context.Background())
	defer stopNotify()
	var notifyDone sync.WaitGroup
	notifyDone.Go(func() { m.notify.Run(notifyCtx) })
	loopsDone.Go(func() { m.downloadsLoop(loops) })
	loopsDone.Go(func() { m.timeline.Loop(loops) })
	uiCtx, stopUI := context.WithCancel(context.Background())
	var uiDone sync.WaitGroup
	uiURL := "off"
	if m.ui != nil {
		uiURL = m.ui.URL()
		uiLog := m.root.With().Str("component", "ui").Logger()
		uiDone.Go(func() {
			if err := m.ui.Serve(uiCtx, uiLn); err != nil {
				uiLog.Error().Err(err).Msg("web UI stopped")
			}
		})
	}
	srv := &http.Server{Handler: m.routes(), ReadHeaderTimeout: 10 * time.Second}
	agentSrv := m.agentServer()
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	go func() { serveErr <- agentSrv.Serve(m.capAgents(agentLn)) }()
	log.Info().Str("home", cfg.Home).Str("socket", cfg.socketPath()).Int("pid", os.Getpid()).
		Str("browser_use", cfg.BrowserUse).Str("version", version).Str("ui", uiURL).Msg("manager ready")
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !errClosed(err) {
			log.Error().Err(err).Msg("API server stopped")
		}
	}
	m.fleet.BeginQuit()
	stopLoops()
	stopUI() // its live streams end with uiCtx; Serve then closes the listener
	loopsDone.Wait()
	uiDone.Wait()
	m.quit()
	srvCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = srv.Shutdown(srvCtx)
	_ = agentSrv.Shutdown(srvCtx)
	stopNotify() // after the quit barrier, whose events (a spent budget) may still be sent until here
	notifyDone.Wait()
	return nil
}

// quit is the barrier: no new work, every browser stopped (or left for adoption), bounded.
func (m *Manager) quit() {
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	began := time.Now()
	m.timeline.Close(2 * time.Second) // the shots of the last calls, while their browsers still run
	m.fleet.Quit(m.cfg.KeepBrowsers)
	m.log.Info().Int64("took_ms", time.Since(began).Milliseconds()).Msg("manager stopped")
}

// boot brings state in line with reality before the API answers: the fleet adopts what still runs, sweeps
// unfinished downloads and binds every endpoint (browsers.Fleet.Boot); wrappers are rewritten.
func (m *Manager) boot(ctx context.Context) error {
	if err := m.layOut(ctx); err != nil {
		return err
	}
	if err := m.downloaded.load(ctx, m.db); err != nil { // before any mux asks for a task's room
		return err
	}
	if err := m.fleet.Boot(ctx); err != nil {
		return err
	}
	if err := m.syncWrappers(ctx); err != nil {
		return err
	}
	if _, err := m.reap(ctx); err != nil {
		m.log.Error().Err(err).Msg("boot reaper pass")
	}
	return nil
}
