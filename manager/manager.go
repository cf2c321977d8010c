package manager

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
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
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/clusterhost"
	"vibebrowser/manager/config"
	"vibebrowser/manager/forward"
	"vibebrowser/manager/handoffs"
	"vibebrowser/manager/localapi"
	"vibebrowser/manager/metrics"
	"vibebrowser/manager/notify"
	"vibebrowser/manager/reaper"
	"vibebrowser/manager/tasks"
	"vibebrowser/manager/timeline"
	"vibebrowser/manager/ui"
	"vibebrowser/manager/wrapper"
	"vibebrowser/mux"
	"vibebrowser/mux/downloads"
	"vibebrowser/state"
)

// Manager is the running daemon: its state, browsers and API.
type Manager struct {
	cfg     *config.Config
	root    zerolog.Logger // without a component: each component's logger derives from it
	log     zerolog.Logger // the manager's own
	db      *state.DB
	metrics *metrics.Metrics
	version string

	ctx         context.Context // the daemon's life: a handoff wait ends with it
	ownsRuntime bool            // the runtime dir carries our marker: the reaper may act in it

	fleet *browsers.Fleet // every browser: its slot, lifecycle, mux and endpoint

	events   eventLog       // the recent events (note)
	ui       *ui.Server     // the web UI; nil when VIBE_UI_ADDR=off
	handoffs *handoffs.Desk // the handoffs: answers, waits, expiry
	notify   *notify.Sender // POSTs the events that need a person to VIBE_NOTIFY_URL (manager/notify)

	tasks *tasks.Desk  // the tasks: leases and tokens
	home  tasks.Layout // the home's folders, laid out for the stores' users (SPEC §14)

	wrappers wrapper.Writer // the wrappers agents call, the shim and its baked config

	exitIPs *forward.ExitIPs // each proxied store's exit IP, checked through its proxy (VIBE_PROXY_CHECK_URL)

	downloads *downloadDesk // the browsers' downloads, and what each task's take (VIBE_DOWNLOAD_MAX_MB)

	timeline *timeline.Desk // what each task did (SPEC §15)

	cluster *clusterhost.Host   // this manager as a host of a cluster (SPEC §19); nil on a single host. Set before boot.
	logins  *clusterhost.Logins // the cluster's copies of the stores' logins, once joined; nil on a single host
}

// newManager assembles a manager on an open state database; Run serves it. root is the daemon's root
// logger, without a component: each component's logger derives from it.
func newManager(ctx context.Context, cfg *config.Config, root zerolog.Logger, db *state.DB, version string) *Manager {
	m := &Manager{cfg: cfg, root: root, log: root.With().Str("component", "manager").Logger(), db: db,
		version: version, ctx: ctx,
		exitIPs: forward.NewExitIPs(ctx, cfg.ProxyCheckURL)}
	m.downloads = &downloadDesk{cfg: cfg, db: db, log: m.log, note: m.note, findStore: m.FindStore,
		step:     func(key, task string, e api.Entry) { m.timeline.Step(key, task, e) }, // m.timeline is set later
		quotaHit: func() { m.metrics.QuotaHit(metrics.QuotaDownloads) }}
	bcfg := cfg.Browsers()
	var remote browsers.RemoteFunc // a store placed on another host is reached there (SPEC §19)
	if cfg.Cluster.On() {
		remote = func(key string) (func(context.Context) (net.Conn, error), bool) {
			if m.cluster == nil {
				return nil, false
			}
			return m.cluster.Remote(key)
		}
		bcfg.KeeperOrphanStop = clusterhost.KeeperOrphanStop
		m.logins = &clusterhost.Logins{}
		bcfg.LoginCopies = m.logins
		// Every host seals and opens the logins with the cluster's secret; a home not joined fails the join
		// in Run, before anything is sealed.
		if id, err := cluster.LoadIdentity(cfg.Home); err == nil {
			bcfg.ClusterKey = id.Secret()
		}
	}
	m.fleet = browsers.New(ctx, bcfg, db, root, browsers.Hooks{Note: m.note,
		Starting:   func(ctx context.Context, sp browsers.Spec) error { return m.wrappers.Write(ctx, sp) },
		Downloaded: m.downloads.record,
		Deliver: func(sp browsers.Spec, d downloads.Download, own *downloads.OwnCopy) (string, bool) {
			if m.cluster == nil {
				return "", false
			}
			return m.cluster.Deliver(sp, d, own) // a client of another host's: its file goes there (SPEC §19)
		},
		DownloadRoom: m.downloads.room,
		DownloadCut: func(sp browsers.Spec, d downloads.Download) {
			m.downloads.cut(sp, d)
			if d.Host != "" && m.cluster != nil { // a client of another host's: its task's timeline is there
				m.cluster.CutStep(sp, d, m.downloads.cutMessage(d))
			}
		},
		Timeline: func(sp browsers.Spec, ev mux.TimelineEvent) {
			if ev.Host != "" && m.cluster != nil { // a client of another host's: its task is there
				m.cluster.TabStep(sp, ev)
				return
			}
			m.timeline.TabStep(sp, ev)
		},
		MayRun: func(ctx context.Context, sp browsers.Spec) error {
			if m.cluster == nil {
				return nil
			}
			return m.cluster.MayRun(ctx, sp)
		},
		Remote: remote})

	m.wrappers = wrapper.Writer{Cfg: cfg, DB: db, Fleet: m.fleet, Log: m.log}
	m.home = tasks.Layout{Cfg: cfg, DB: db, Fleet: m.fleet, Log: m.log}
	m.tasks = tasks.New(tasks.Config{Cfg: cfg, DB: db, Log: m.log, Fleet: m.fleet, Reaper: m.reaper,
		FindStore: m.FindStore, DownloadDir: m.downloads.dir})
	m.timeline = timeline.NewDesk(timeline.DeskConfig{Cfg: cfg, DB: db, Fleet: m.fleet, Ctx: ctx, Log: m.log, Root: root,
		Full: func() { m.metrics.QuotaHit(metrics.QuotaTimeline) }, Cut: func() { m.metrics.QuotaHit(metrics.QuotaReportCut) },
		Remote: func(key, client string) timeline.Browser {
			if m.cluster == nil {
				return nil
			}
			if tabs := m.cluster.Tabs(key, client); tabs != nil { // a store of another host: asked there
				return tabs
			}
			return nil
		}})
	m.metrics = metrics.New(m.fleet.Collectors()...)
	m.handoffs = handoffs.New(handoffs.Config{DB: db, Log: m.log, Ctx: ctx, Note: m.note, Renew: m.tasks.Touch,
		UILink: m.uiLink, Quitting: m.fleet.Quitting, Store: m.shimStore, Count: m.countTask,
		QuotaHit: func() { m.metrics.QuotaHit(metrics.QuotaHandoffs) }, WaitMax: cfg.HandoffWaitMax, Max: cfg.HandoffMax})
	m.notify = notify.New(cfg.NotifyURL, root.With().Str("component", "notify").Logger(), m.describeEvent)
	m.metrics.Registry.MustRegister(append(m.notify.Collectors(), handoffs.Metrics(db))...)
	return m
}

// Run is `vibe-browser serve`: it holds the home's lock, serves the API on its socket and runs until ctx
// ends, then passes the quit barrier. log is the root logger; every component derives its own from it. The
// caller installs signal handling before calling Run (a first signal cancels ctx; a second exits at once).
func Run(ctx context.Context, cfg *config.Config, log zerolog.Logger, version string) error {
	for _, dir := range []string{cfg.Home, cfg.Path("run"), cfg.Path("bin"), cfg.Path("bh-tmp"),
		cfg.Path("profiles"), cfg.Path("downloads")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	lockPath := cfg.Path("run", "manager.lock")
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
	ln, err := localapi.ListenOwner(cfg.SocketPath(), log)
	if err != nil {
		return err
	}
	bound = append(bound, ln)
	agentLn, err := localapi.ListenAgents(api.AgentSocketPath(cfg.Home))
	if err != nil {
		return err
	}
	bound = append(bound, agentLn)
	db, err := state.Open(cfg.Path("state.db"))
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
	if err := tasks.CheckUsersRunnable(ctx, cfg, db); err != nil {
		return err
	}
	// The runtime dir is created by Claim, with the marker that lets the reaper act in it; a dir someone
	// else made is used but never swept.
	if m.ownsRuntime, err = reaper.Claim(cfg.Path("r")); err != nil {
		return err
	}
	if !m.ownsRuntime {
		log.Warn().Str("dir", cfg.Path("r")).Msg("runtime dir was not created by a vibe-browser manager: the daemon reaper stays off")
	}
	if cfg.BrowserUse == "" {
		log.Warn().Str("problem", cfg.BrowserUseProblem).Msg("no real browser-use CLI: wrappers are not written and ensure refuses")
	}
	if uiLn != nil {
		m.ui = m.newUI(uiLn)
	}
	if cfg.Cluster.On() {
		// Before boot: an adopted browser runs on only with its store's lease.
		hc := clusterhost.Config{Cfg: cfg, Root: m.root, DB: db, Fleet: m.fleet, Logins: m.logins, Note: m.note,
			Browsers: hostStores{m}.running, Keep: clusterhost.Keep{DownloadDir: m.downloads.dir,
				Downloaded: m.downloads.record, TabStep: m.timeline.TabStep, Fault: m.timeline.EventStep,
				Cut: m.downloads.cutStep}}
		if m.ui != nil {
			hc.UI = m.ui.ServeHost // a store of this host, shown by another host's UI (SPEC §19 "One pane")
		}
		m.cluster, err = clusterhost.Start(ctx, hc)
		if err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		defer m.cluster.Close()
	}
	if err := m.boot(ctx); err != nil {
		m.fleet.Quit(true) // what was adopted keeps running for the next manager
		return fmt.Errorf("boot: %w", err)
	}
	serving = true
	loops, stopLoops := context.WithCancel(ctx)
	var loopsDone sync.WaitGroup
	if m.cluster != nil {
		if err := (hostStores{m}).publishLocal(ctx); err != nil {
			log.Error().Err(err).Msg("this host's stores are not given to the cluster yet (the next start tries again)")
		}
		loopsDone.Go(func() { hostStores{m}.follow(loops) })
	}
	loopsDone.Go(func() { m.idleLoop(loops) })
	loopsDone.Go(func() { m.fleet.Snapshots().Loop(loops) })
	loopsDone.Go(func() { m.reapLoop(loops) })
	loopsDone.Go(func() { m.tasks.Loop(loops) })
	loopsDone.Go(func() { m.handoffs.Loop(loops) })
	notifyCtx, stopNotify := context.WithCancel(context.Background())
	defer stopNotify()
	var notifyDone sync.WaitGroup
	notifyDone.Go(func() { m.notify.Run(notifyCtx) })
	loopsDone.Go(func() { m.downloads.loop(loops) })
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
	h := m.api()
	srv, agentSrv := h.OwnerServer(), h.AgentServer()
	capped, conns := localapi.CapAgents(agentLn, cfg.AgentConnMax, func() { m.metrics.QuotaHit(metrics.QuotaAgentConn) })
	m.metrics.Registry.MustRegister(conns)
	serveErr := make(chan error, 2)
	go func() { serveErr <- srv.Serve(ln) }()
	go func() { serveErr <- agentSrv.Serve(capped) }()
	log.Info().Str("home", cfg.Home).Str("socket", cfg.SocketPath()).Int("pid", os.Getpid()).
		Str("browser_use", cfg.BrowserUse).Str("version", version).Str("ui", uiURL).Msg("manager ready")
	_, _ = daemon.SdNotify(false, daemon.SdNotifyReady)

	select {
	case <-ctx.Done():
	case err := <-serveErr:
		if !localapi.Closed(err) {
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

// api is the local API's handler on this manager.
func (m *Manager) api() *localapi.Handler {
	h := &localapi.Handler{Log: m.log, Version: m.version, Cfg: m.cfg, DB: m.db, Fleet: m.fleet, Daemon: m, Downloads: m.downloads,
		Tasks: m.tasks, Handoffs: m.handoffs, Timeline: m.timeline, Wrappers: m.wrappers, Metrics: m.metrics.Handler()}
	if m.cluster != nil {
		h.Mover = m.cluster
	}
	return h
}

// UI is the web UI, or nil with it off.
func (m *Manager) UI() *ui.Server { return m.ui }

// uiLink is the web UI's address of path, or "" with the UI off.
func (m *Manager) uiLink(path string) string {
	if m.ui == nil {
		return ""
	}
	return m.ui.URL() + path
}

// quit is the barrier: no new work, every browser stopped (or left for adoption), bounded.
func (m *Manager) quit() {
	_, _ = daemon.SdNotify(false, daemon.SdNotifyStopping)
	began := time.Now()
	m.timeline.Close(2 * time.Second) // the shots of the last calls, while their browsers still run
	m.fleet.Quit(m.cfg.KeepBrowsers)
	if m.cluster != nil && !m.cfg.KeepBrowsers {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		m.cluster.ReleaseAll(ctx) // every browser stopped: another host may take each at once
		cancel()
	}
	m.log.Info().Int64("took_ms", time.Since(began).Milliseconds()).Msg("manager stopped")
}

// boot brings state in line with reality before the API answers: the fleet adopts what still runs, sweeps
// unfinished downloads and binds every endpoint (browsers.Fleet.Boot); wrappers are rewritten.
func (m *Manager) boot(ctx context.Context) error {
	if err := m.home.LayOut(ctx); err != nil {
		return err
	}
	if err := m.downloads.quota.load(ctx, m.db); err != nil { // before any mux asks for a task's room
		return err
	}
	if err := m.fleet.Boot(ctx); err != nil {
		return err
	}
	if err := m.wrappers.Sync(ctx); err != nil {
		return err
	}
	if _, err := m.Reap(ctx); err != nil {
		m.log.Error().Err(err).Msg("boot reaper pass")
	}
	return nil
}
