// Package browsers runs every store's browser, and the web browser, behind its mux and its endpoint: the
// per-store slot and lock, ensure, start and stop, relaunch within a budget, adoption, and the backends.
package browsers

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/seal"
	"vibebrowser/mux"
	"vibebrowser/mux/downloads"
	"vibebrowser/state"
)

// Config is what the fleet takes of the daemon's configuration (SPEC §4.3; a knob's 0 means what it means
// there).
type Config struct {
	Home   string // VIBE_HOME: profiles/, downloads/ and agents/ are under it
	Chrome string // VIBE_CHROME; "" = search PATH
	// ChromeTransport is VIBE_CHROME_TRANSPORT; "" = the pipe.
	ChromeTransport chrome.Transport
	// Keeper runs a browser's keeper (keeper.Main); nil = this executable with "keep".
	Keeper []string
	// KeeperOrphanStop is how long a keeper keeps its browser once its manager is gone (keeper.Config.OrphanStop):
	// set in a cluster (SPEC §19), 0 on a single host (the browser waits for the next manager to adopt it).
	KeeperOrphanStop time.Duration
	Headless         *bool         // VIBE_HEADLESS; nil = headless when there is no display
	ZiniaoClient     []string      // VIBE_ZINIAO_CLIENT; nil = never started
	ProxyPortBase    int           // VIBE_PROXY_PORT_BASE
	StartTimeout     time.Duration // VIBE_BROWSER_START_TIMEOUT_S; 0 disables
	RelaunchMax      int           // VIBE_BROWSER_RELAUNCH_MAX; 0 disables the budget
	RelaunchWindow   time.Duration // VIBE_BROWSER_RELAUNCH_WINDOW_S
	TabCap           int           // VIBE_TAB_CAP; 0 disables
	MuxMaxClients    int           // VIBE_MUX_MAX_CLIENTS
	MuxGrace         time.Duration // VIBE_MUX_GRACE_S; 0: tabs close at once
	Idle             time.Duration // VIBE_BROWSER_IDLE_S: how long a browser must be untouched to be idle
	MuxTiming        MuxTiming     // only tests set it
	// AgentUser is VIBE_AGENT_USER (SPEC §14): a store's agent user unless it names its own ("" = none). Its
	// browser user is its own setting or one the manager makes for it (UserNames).
	AgentUser string
	// SPEC §18: the login's checkpoints and snapshots.
	LoginCheckpoint time.Duration // VIBE_LOGIN_CHECKPOINT_S: the most often a jar is checkpointed; 0 = never
	SnapshotEvery   time.Duration // VIBE_SNAPSHOT_EVERY: snapshots of a browser that keeps running; 0 = at clean stops only
	SnapshotKeep    int           // VIBE_SNAPSHOT_KEEP: snapshots kept per store
	SnapshotDir     string        // VIBE_SNAPSHOT_DIR: where snapshots are kept
	SnapshotKey     string        // VIBE_SNAPSHOT_KEY; "" = the home's key file (seal.LoadKey)
	// SPEC §19, nil on a single host. LoginCopies keep every store's checkpoints and snapshots on the cluster
	// too, and a launch takes the cluster's where this host's are missing or older. ClusterKey, the cluster's
	// secret, then seals every checkpoint and snapshot (what the home's key sealed before still opens).
	LoginCopies LoginCopies
	ClusterKey  *seal.Key
}

// MuxTiming overrides how fast a mux gives up on a hung browser; zero values keep the mux's defaults.
type MuxTiming struct {
	PingInterval, PongTimeout, ReconnectMin, ReconnectMax time.Duration
	ReconnectTries                                        int
}

func (c *Config) path(parts ...string) string {
	return filepath.Join(append([]string{c.Home}, parts...)...)
}

// headless decides headless mode for a store whose own setting is pref (nil: follow VIBE_HEADLESS, then
// the display: headless when there is none).
func (c *Config) headless(pref *bool) bool {
	switch {
	case pref != nil:
		return *pref
	case c.Headless != nil:
		return *c.Headless
	}
	return os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" && !isDarwin
}

// isDarwin: macOS always has a display, so its browsers default to headed.
const isDarwin = runtime.GOOS == "darwin"

// Hooks are what the fleet tells the daemon. Each is called without a store's lock held, except Starting.
type Hooks struct {
	// Note records an event of key's browser (the daemon's one place for events).
	Note func(level zerolog.Level, kind, key string, ev api.Event)
	// Starting runs, under the store's lock, before sp's browser starts (the daemon rewrites its wrapper);
	// its error is logged, not fatal.
	Starting func(ctx context.Context, sp Spec) error
	// Downloaded files a download that the mux of sp's browser saw finish.
	Downloaded func(sp Spec, d downloads.Download)
	// Deliver is the muxes' hook of the same name (mux.Hooks), for sp's browser: a download of a client of
	// another host goes there before its client hears "completed".
	Deliver func(sp Spec, d downloads.Download, own *downloads.OwnCopy) (string, bool)
	// DownloadRoom and DownloadCut are the muxes' hooks of the same names (mux.Hooks), for sp's browser.
	DownloadRoom func(sp Spec, ownerDir string) int64
	DownloadCut  func(sp Spec, d downloads.Download)
	// Timeline takes a step of a task's tab that the mux of sp's browser saw (SPEC §15).
	Timeline func(sp Spec, ev mux.TimelineEvent)
	// MayRun, when set, says whether sp's browser may run on this host now (SPEC §19: the host holds the
	// store's lease, taking it when it is free): it is asked before every launch, relaunch and adoption, and
	// once more before a launched browser is served. nil: always (a single host).
	MayRun func(ctx context.Context, sp Spec) error
	// Remote, when set, says whether a store runs on another host and how to reach it there (SPEC §19): its
	// endpoint here relays its clients to that host. nil: every store runs here.
	Remote RemoteFunc
}

// Fleet owns every browser of the daemon: one slot per key (a store id or api.WebKey).
type Fleet struct {
	cfg   Config
	root  zerolog.Logger // without a component: the muxes' and backends' loggers derive from it
	log   zerolog.Logger // component browsers
	db    *state.DB
	hooks Hooks

	ctx     context.Context // the daemon's life: starts run on it, not on a request's context
	closing atomic.Bool     // set when the quit barrier begins: nothing starts any more

	backends map[state.Backend]backend

	mu    sync.Mutex // mu guards byKey
	byKey map[string]*slot

	starts, startFailures *prometheus.CounterVec

	wg sync.WaitGroup // every mux goroutine, endpoint and death watcher

	snaps  *Snapshots        // the stores' profile snapshots (SPEC §18)
	logins *loginCheckpoints // what every browser's login keeper shares (SPEC §18)
	copies *loginCopier      // the logins' copies on the cluster (SPEC §19); nil on a single host
	sweep  downloadSweep     // the boot's sweep of unfinished downloads
}

// New assembles the fleet of a daemon whose life is ctx, on its open state database. root is the daemon's
// root logger, without a component.
func New(ctx context.Context, cfg Config, db *state.DB, root zerolog.Logger, hooks Hooks) *Fleet {
	f := &Fleet{cfg: cfg, root: root, log: root.With().Str("component", "browsers").Logger(), db: db,
		hooks: hooks, ctx: ctx, byKey: map[string]*slot{},
		starts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vibe_browser_starts_total", Help: "Browsers started, by backend.",
		}, []string{"backend"}),
		startFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vibe_browser_start_failures_total", Help: "Browser starts that failed, by backend.",
		}, []string{"backend"}),
	}
	// The key that seals the stores' checkpoints and snapshots: VIBE_SNAPSHOT_KEY, else the home's key file,
	// made on first use; the cluster's secret in a cluster.
	sealKey := sync.OnceValues(func() (*seal.Key, error) { return sealKeyOf(cfg, f.log) })
	f.snaps = newSnapshots(f, sealKey)
	f.logins = newLoginCheckpoints(&f.cfg, f.log, f.note, sealKey)
	if cfg.LoginCopies != nil {
		f.copies = newLoginCopier(cfg.LoginCopies, cfg.Home, f.snaps.store.Dir, f.log)
		f.logins.copies = f.copies
	}
	f.sweep = downloadSweep{root: f.cfg.path("downloads"), log: f.log}
	f.backends = newBackends(&f.cfg, db, root)
	for backend := range f.backends { // present at 0 from the start
		f.starts.WithLabelValues(string(backend))
		f.startFailures.WithLabelValues(string(backend))
	}
	return f
}

// Collectors are the fleet's Prometheus series: starts and failures by backend, browsers running and
// clients connected.
func (f *Fleet) Collectors() []prometheus.Collector {
	running := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vibe_browsers_running", Help: "Browsers running under this manager.",
	}, func() float64 { return float64(len(f.Running())) })
	clients := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vibe_mux_clients", Help: "Connected mux clients over every browser.",
	}, func() float64 {
		n := 0
		for _, in := range f.Running() {
			n += in.mux.Stats().Clients
		}
		return float64(n)
	})
	return []prometheus.Collector{f.starts, f.startFailures, f.logins.counter, running, clients}
}

// note records an event through the daemon's hook.
func (f *Fleet) note(level zerolog.Level, kind, key string, ev api.Event) {
	if f.hooks.Note != nil {
		f.hooks.Note(level, kind, key, ev)
	}
}

// BeginQuit makes every later ensure fail with errdefs.ErrShuttingDown; Quit then stops what runs.
func (f *Fleet) BeginQuit() { f.closing.Store(true) }

// Quitting reports whether the quit barrier has begun.
func (f *Fleet) Quitting() bool { return f.closing.Load() }

// quitBound is the quit barrier's overall bound; each browser gets stopBound inside it. The stops' snapshots
// then get snapshotQuitBound, within the service's 40 s (service.StopTimeoutSec) with the rest of the quit.
const (
	quitBound         = 20 * time.Second
	snapshotQuitBound = 15 * time.Second
)

// Quit is the quit barrier's part of the fleet: nothing starts any more; every browser is stopped, bounded,
// or with keep left running for the next manager to adopt; every endpoint is unbound.
func (f *Fleet) Quit(keep bool) {
	f.BeginQuit()
	if keep {
		f.log.Info().Msg("quit: leaving browsers running for the next manager (VIBE_KEEP_BROWSERS_ON_EXIT=1)")
		f.detachAll()
	} else {
		f.stopAll(quitBound)
	}
	snapped := make(chan struct{})
	go func() { f.snaps.wg.Wait(); close(snapped) }()
	select {
	case <-snapped:
	case <-time.After(snapshotQuitBound):
		f.log.Error().Msg("quit: the stops' snapshots were not done in time; exiting anyway (the next stop takes one)")
	}
	f.copies.close(copiesQuitBound)
	f.closeEndpoints()
	done := make(chan struct{})
	go func() { f.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		f.log.Warn().Msg("quit: some muxes did not end in time")
	}
}
