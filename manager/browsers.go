package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/mux"
	"vibebrowser/state"
)

// healthyUptime is how long a browser must have run before its death no longer counts against the relaunch
// budget: "a healthy launch clears it" (SPEC §4.5), where healthy means it stayed up, not merely started.
const healthyUptime = time.Minute

// stopBound is the per-browser bound of a stop: Browser.close, SIGTERM, SIGKILL of the group all fit in it.
const stopBound = 5 * time.Second

// runner is a started browser, whatever its backend.
type runner interface {
	PID() int
	StartTime() int64 // ms since the epoch; 0 when the manager runs no process
	HTTPEndpoint() string
	Adopted() bool
	Done() <-chan struct{}
	Stop(ctx context.Context) error
}

// live is one running browser with its mux. It is replaced as a whole, never mutated.
type live struct {
	target    target
	run       runner
	mux       *mux.Mux
	port      int
	startedAt time.Time
	cancel    context.CancelFunc // ends the mux's Serve
	served    chan struct{}      // closed when Serve has returned

	// lastEnsure is the last ensure that handed this browser out (unix nanos). A shim connects right after
	// its ensure, so the idle sweep counts a recent ensure as activity.
	lastEnsure atomic.Int64
}

// healthy reports whether both the browser process and its mux are still up.
func (l *live) healthy() bool {
	select {
	case <-l.run.Done():
		return false
	case <-l.served:
		return false
	default:
		return true
	}
}

// browser is the slot of one key (a store id or api.WebKey).
type browser struct {
	key string
	// lock is the per-store lock, a one-slot semaphore so that waiting honours contexts. It is held across
	// start, stop and the idle decision, never across two stores.
	lock chan struct{}
	cur  atomic.Pointer[live] // read without the lock by status and metrics

	// guarded by lock:
	lastStartFailed bool          // the last start failed: the next one is a relaunch
	died            bool          // the browser died under us (not stopped): the next start is a relaunch
	diedUptime      time.Duration // how long it had run when it died
	retiring        *live         // its relaunch failed and its mux is ending: bury it, never relaunch it
}

func (b *browser) acquire(ctx context.Context) error {
	select {
	case b.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *browser) release() { <-b.lock }

// current returns the running browser, or nil when it is stopped or dead.
func (b *browser) current() *live {
	if l := b.cur.Load(); l != nil && l.healthy() {
		return l
	}
	return nil
}

// browserSlot returns key's slot, creating it on first use.
func (m *Manager) browserSlot(key string) *browser {
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.browsers[key]
	if b == nil {
		b = &browser{key: key, lock: make(chan struct{}, 1)}
		m.browsers[key] = b
	}
	return b
}

// target is what a start needs to know about a store or the web browser.
type target struct {
	key     string
	slug    string
	token   string
	backend state.Backend
	opts    storeOptions
	name    string        // for messages
	ziniao  *ziniaoTarget // ziniao backend only
}

// storeOptions are the backend options kept in a store's config JSON.
type storeOptions struct {
	CDPURL     string `json:"cdp_url,omitempty"`
	Headless   *bool  `json:"headless,omitempty"`
	ZiniaoPort int    `json:"ziniao_port,omitempty"`
}

func (m *Manager) storeTarget(s state.Store) (target, error) {
	var opts storeOptions
	if len(s.Config) > 0 {
		if err := json.Unmarshal(s.Config, &opts); err != nil {
			return target{}, fmt.Errorf("store %s: config: %w", s.Name, err)
		}
	}
	t := target{key: s.ID, slug: s.Slug, token: s.Token, backend: s.Backend, opts: opts, name: "store " + s.Name}
	if s.Backend == state.BackendZiniao {
		t.ziniao = &ziniaoTarget{browser: s.ZiniaoBrowser, account: s.Ziniao, port: opts.ZiniaoPort}
	}
	return t, nil
}

// webTarget describes the store-less web browser; its token is kept in settings.
func (m *Manager) webTarget(ctx context.Context) (target, error) {
	token, err := m.db.GetSetting(ctx, "web_token")
	if errors.Is(err, state.ErrNotFound) {
		token = state.NewToken()
		err = m.db.SetSetting(ctx, "web_token", token)
	}
	if err != nil {
		return target{}, err
	}
	return target{key: api.WebKey, slug: api.WebKey, token: token, backend: state.BackendChrome, name: "the web browser"}, nil
}

// ensure returns t's running browser, starting it when it is stopped or dead. It holds t's lock, so
// concurrent calls for one store start one browser and other stores are never blocked.
func (m *Manager) ensure(ctx context.Context, t target) (*live, error) {
	if m.closing.Load() {
		return nil, ErrShuttingDown
	}
	// Even the fast path takes the store's lock: the idle sweep decides under it, so a browser handed out
	// here is never stopped by a sweep that began before the caller connected.
	b := m.browserSlot(t.key)
	if err := b.acquire(ctx); err != nil {
		return nil, err
	}
	defer b.release()
	if m.closing.Load() {
		return nil, ErrShuttingDown
	}
	if l := b.current(); l != nil {
		l.lastEnsure.Store(time.Now().UnixNano())
		return l, nil
	}
	if dead := b.cur.Load(); dead != nil { // died; its watcher has not cleaned up yet
		m.buryLocked(b, dead)
	}
	if err := m.spendRelaunchLocked(ctx, b, t); err != nil {
		return nil, err
	}
	l, err := m.startLocked(t)
	b.lastStartFailed = err != nil
	if err != nil {
		m.metrics.startFailures.WithLabelValues(string(t.backend)).Inc()
		return nil, err
	}
	l.lastEnsure.Store(time.Now().UnixNano())
	m.install(b, l)
	return l, nil
}

// spendRelaunchLocked charges a start that follows a death or a failed start to t's relaunch budget, and
// refuses it with ErrBudget when the budget is spent. A first start, or one after a stop, is free. The
// caller holds b's lock.
func (m *Manager) spendRelaunchLocked(ctx context.Context, b *browser, t target) error {
	relaunch := b.lastStartFailed || b.died
	if b.died && b.diedUptime >= healthyUptime {
		if err := m.db.ClearRelaunches(ctx, t.key); err != nil {
			return err
		}
	}
	b.died = false
	if !relaunch || m.cfg.RelaunchMax <= 0 {
		return nil
	}
	now := time.Now()
	n, err := m.db.CountRelaunches(ctx, t.key, now.Add(-m.cfg.RelaunchWindow))
	if err != nil {
		return err
	}
	if n >= m.cfg.RelaunchMax {
		return fmt.Errorf("%w: %s died or failed to start %d times in the last %v (VIBE_BROWSER_RELAUNCH_MAX=%d per "+
			"VIBE_BROWSER_RELAUNCH_WINDOW_S=%d); look at the manager's log, then force a start with "+
			"`vibe-browser browser start %s` or wait for the window to pass", ErrBudget, t.name, n, m.cfg.RelaunchWindow,
			m.cfg.RelaunchMax, int(m.cfg.RelaunchWindow.Seconds()), t.slug)
	}
	return m.db.RecordRelaunch(ctx, t.key, now)
}

// install makes l b's running browser and starts its death watcher.
func (m *Manager) install(b *browser, l *live) {
	b.cur.Store(l)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.watch(b.key, l)
	}()
}

// buryLocked cleans up after a browser that died under us (its mux, its state) and remembers the death for
// the relaunch budget. The caller holds b's lock.
func (m *Manager) buryLocked(b *browser, dead *live) {
	m.log.Warn().Str("browser", b.key).Int("pid", dead.run.PID()).Dur("uptime", time.Since(dead.startedAt)).
		Msg("browser died")
	b.died, b.diedUptime = true, time.Since(dead.startedAt)
	m.teardownLocked(b, dead)
}

// watch acts as soon as l's browser dies. A Chromium that crashed is relaunched on its profile behind the
// same mux, so connected clients stay connected and every task gets its restored tabs back; any other death
// (a clean exit: a user closed the window), or a relaunch that fails or is over budget, is buried, so a dead
// browser frees its port and shows as stopped without waiting for the next ensure. watch returns when l is
// torn down or replaced any other way.
func (m *Manager) watch(key string, l *live) {
	select {
	case <-l.served:
		return
	case <-l.run.Done():
	}
	b := m.browserSlot(key)
	if err := b.acquire(m.ctx); err != nil {
		return // the daemon is quitting; the barrier stops what is left
	}
	defer b.release()
	if b.cur.Load() != l {
		return
	}
	if crashed(l) && b.retiring != l && !m.closing.Load() {
		err := m.relaunchCrashedLocked(b, l)
		if err == nil {
			return
		}
		m.log.Error().Err(err).Str("browser", key).Msg("crashed browser not relaunched")
	}
	m.buryLocked(b, l)
}

// crashed reports whether l's browser is a Chromium this manager launched that ended on a signal or a
// failure status. An adopted browser's exit status is unknown, so it never counts as a crash.
func crashed(l *live) bool {
	p, ok := l.run.(*chrome.Process)
	return ok && p.ExitErr() != nil
}

// relaunchCrashedLocked relaunches a crashed browser behind its mux and waits for the mux to reconnect.
// The caller holds b's lock.
func (m *Manager) relaunchCrashedLocked(b *browser, dead *live) error {
	ctx, cancel := m.startContext()
	defer cancel()
	next, err := m.relaunchLocked(ctx, b, dead, "crashed")
	if err != nil {
		return err
	}
	next.mux.Relaunched(next.run.HTTPEndpoint())
	if err := waitUpstream(ctx, next.mux, next.served); err != nil {
		m.abandonRelaunchLocked(b, next)
		return err
	}
	m.install(b, next)
	return nil
}

// relaunchHung is the chrome backend's mux relaunch hook: the mux found its browser unreachable on every
// reconnect attempt while the process may still be running (hung). Under the store's lock the process is
// stopped and a fresh one launched on the profile; the mux dials the returned endpoint itself. When the
// relaunch is refused (over budget) or fails, the browser is buried instead, after the mux has let go.
func (m *Manager) relaunchHung(ctx context.Context, key string, mx *mux.Mux) (string, error) {
	b := m.browserSlot(key)
	if err := b.acquire(ctx); err != nil {
		return "", err
	}
	defer b.release()
	l := b.cur.Load()
	if l == nil || l.mux != mx || m.closing.Load() {
		return "", errors.New("this browser is being stopped or replaced")
	}
	sctx, cancel := m.startContext()
	defer cancel()
	defer context.AfterFunc(ctx, cancel)() // the mux stopping ends the relaunch too
	next, err := m.relaunchLocked(sctx, b, l, "unreachable after every reconnect attempt")
	if err != nil {
		m.log.Error().Err(err).Str("browser", key).Msg("hung browser not relaunched: stopping it")
		b.retiring = l
		// Burying waits for the mux to end, and the mux waits for this hook: bury once the hook returned.
		m.wg.Go(func() {
			if b.acquire(m.ctx) == nil {
				defer b.release()
				if b.cur.Load() == l {
					m.buryLocked(b, l)
				}
			}
		})
		l.cancel()
		return "", err
	}
	m.install(b, next)
	return next.run.HTTPEndpoint(), nil
}

// relaunchLocked replaces old's browser, crashed or hung, with a fresh Chromium on its profile (Chromium
// restores its last session), charged to the relaunch budget. The new browser is recorded as running and
// shares old's mux; the caller points the mux at it and installs it. The caller holds b's lock.
func (m *Manager) relaunchLocked(ctx context.Context, b *browser, old *live, why string) (*live, error) {
	t := old.target
	m.log.Warn().Str("browser", t.key).Int("pid", old.run.PID()).Str("why", why).
		Dur("uptime", time.Since(old.startedAt)).Msg("relaunching the browser behind its mux")
	b.died, b.diedUptime = true, time.Since(old.startedAt)
	if err := m.spendRelaunchLocked(ctx, b, t); err != nil {
		return nil, err
	}
	// The old process group goes first: a hung browser, or renderers of a crashed one on their way out.
	if err := old.run.Stop(ctx); err != nil {
		return nil, err
	}
	run, err := m.launch(ctx, t)
	b.lastStartFailed = err != nil
	if err != nil {
		m.metrics.startFailures.WithLabelValues(string(t.backend)).Inc()
		return nil, err
	}
	next := &live{target: t, run: run, mux: old.mux, port: old.port, startedAt: time.Now(), cancel: old.cancel,
		served: old.served}
	next.lastEnsure.Store(old.lastEnsure.Load())
	if err := m.recordRunning(ctx, t, run, next.startedAt); err != nil {
		m.abandonRelaunchLocked(b, next)
		return nil, err
	}
	m.metrics.starts.WithLabelValues(string(t.backend)).Inc()
	m.log.Info().Str("browser", t.key).Int("pid", run.PID()).Msg("browser relaunched")
	return next, nil
}

// abandonRelaunchLocked stops a relaunched browser that could not be put to use; the next start of the
// store counts as a relaunch.
func (m *Manager) abandonRelaunchLocked(b *browser, next *live) {
	ctx, cancel := context.WithTimeout(context.Background(), stopBound)
	defer cancel()
	_ = next.run.Stop(ctx)
	b.lastStartFailed = true
}

// startContext bounds a start by VIBE_BROWSER_START_TIMEOUT_S on the daemon's context (not a caller's: a
// client that gives up does not abort a start others may be waiting for).
func (m *Manager) startContext() (context.Context, context.CancelFunc) {
	if m.cfg.StartTimeout > 0 {
		return context.WithTimeout(m.ctx, m.cfg.StartTimeout)
	}
	return context.WithCancel(m.ctx)
}

// startLocked launches t's browser and its mux. The caller holds t's lock. The start is bounded (see
// startContext); a half-started browser is torn down on failure.
func (m *Manager) startLocked(t target) (*live, error) {
	ctx, cancel := m.startContext()
	defer cancel()
	if err := m.writeWrapperFor(ctx, t); err != nil {
		m.log.Warn().Err(err).Str("browser", t.key).Msg("wrapper not written")
	}
	for _, dir := range []string{m.cfg.path("profiles", t.slug), m.cfg.path("downloads", t.slug)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	run, err := m.launch(ctx, t)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %s was not ready within VIBE_BROWSER_START_TIMEOUT_S=%d; it was stopped: %v",
				ErrStartTimeout, t.name, int(m.cfg.StartTimeout.Seconds()), err)
		}
		if errors.Is(err, ErrUnavailable) || errors.Is(err, ErrBadRequest) || errors.Is(err, state.ErrConflict) {
			return nil, fmt.Errorf("start %s: %w", t.name, err)
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrStartFailed, t.name, err)
	}
	l, err := m.attachMux(ctx, t, run, nil)
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), stopBound)
		defer cancel()
		_ = run.Stop(stopCtx)
		return nil, err
	}
	m.metrics.starts.WithLabelValues(string(t.backend)).Inc()
	m.log.Info().Str("browser", t.key).Str("slug", t.slug).Int("pid", run.PID()).Int("port", l.port).
		Dur("took", time.Since(began)).Msg("browser started")
	return l, nil
}

// launch starts the backend's browser.
func (m *Manager) launch(ctx context.Context, t target) (runner, error) {
	switch t.backend {
	case state.BackendChrome:
		bin, err := chrome.Find(m.cfg.Chrome)
		if err != nil {
			return nil, fmt.Errorf("%w: %v (set VIBE_CHROME to the browser binary)", ErrUnavailable, err)
		}
		return chrome.Launch(ctx, chrome.Options{
			Binary:     bin,
			ProfileDir: m.cfg.path("profiles", t.slug),
			Headless:   m.cfg.headless(t.opts.Headless),
			NoSandbox:  os.Geteuid() == 0,
			Log:        m.root.With().Str("component", "chrome").Str("browser", t.key).Logger(),
		})
	case state.BackendCDP:
		return connectCDP(ctx, t.opts.CDPURL)
	case state.BackendZiniao:
		return m.launchZiniao(ctx, t)
	}
	return nil, fmt.Errorf("%w: the %s backend cannot be started by this manager", ErrUnavailable, t.backend)
}

// attachMux binds t's registry port and serves a mux for run on it. ownership is the adopted browser's
// saved tab ownership (nil for a fresh launch).
func (m *Manager) attachMux(ctx context.Context, t target, run runner, ownership map[string][]string) (*live, error) {
	ln, port, err := m.listenPort(ctx, t.key)
	if err != nil {
		return nil, err
	}
	if !run.Adopted() {
		// A fresh browser has none of the old tabs; forget their owners.
		if err := m.db.ReplaceOwnership(ctx, t.key, nil); err != nil {
			ln.Close()
			return nil, err
		}
	}
	key := t.key
	var hooks mux.Hooks
	hooks.OwnershipChanged = func(o map[string][]string) { m.saveOwnership(key, o) }
	var mx *mux.Mux
	if _, ok := run.(*chrome.Process); ok {
		hooks.Relaunch = func(ctx context.Context) (string, error) { return m.relaunchHung(ctx, key, mx) }
	}
	// The knobs' 0 means "off" (VIBE_TAB_CAP=0: no cap; VIBE_MUX_GRACE_S=0: close at once); the mux's 0
	// means its default.
	tabCap, grace := m.cfg.TabCap, m.cfg.MuxGrace
	if tabCap == 0 {
		tabCap = mux.Off
	}
	if grace == 0 {
		grace = mux.Off
	}
	mx, err = mux.New(mux.Config{
		Upstream:    run.HTTPEndpoint(),
		Listener:    ln,
		Token:       t.token,
		DownloadDir: m.cfg.path("downloads", t.slug),
		TabCap:      tabCap,
		MaxClients:  m.cfg.MuxMaxClients,
		Grace:       grace,
		FreshLaunch: !run.Adopted(),
		Ownership:   ownership,
		Hooks:       hooks,
		// Zero unless a test shortened them:
		PingInterval:   m.cfg.muxTiming.pingInterval,
		PongTimeout:    m.cfg.muxTiming.pongTimeout,
		ReconnectMin:   m.cfg.muxTiming.reconnectMin,
		ReconnectMax:   m.cfg.muxTiming.reconnectMax,
		ReconnectTries: m.cfg.muxTiming.reconnectTries,
		Log:            m.log.With().Str("component", "mux").Str("browser", t.key).Logger(),
	})
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("mux for %s: %w", t.name, err)
	}
	muxCtx, cancel := context.WithCancel(context.Background())
	l := &live{target: t, run: run, mux: mx, port: port, startedAt: time.Now(), cancel: cancel, served: make(chan struct{})}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(l.served)
		if err := mx.Serve(muxCtx); err != nil && muxCtx.Err() == nil {
			m.log.Error().Err(err).Str("browser", key).Msg("mux stopped")
		}
	}()
	// A client's first command must find the browser connected: wait for the mux's upstream before handing
	// the endpoint out.
	if err := waitUpstream(ctx, mx, l.served); err != nil {
		cancel()
		<-l.served
		return nil, fmt.Errorf("%w: the mux of %s did not connect to the browser: %v", ErrStartFailed, t.name, err)
	}
	if err := m.recordRunning(ctx, t, run, l.startedAt); err != nil {
		cancel()
		<-l.served
		return nil, err
	}
	return l, nil
}

// recordRunning records t's browser as running on run, so the next manager can adopt it.
func (m *Manager) recordRunning(ctx context.Context, t target, run runner, startedAt time.Time) error {
	session := state.BrowserSession{Key: t.key, PID: run.PID(), CDPEndpoint: run.HTTPEndpoint(),
		Status: state.BrowserRunning, Adopted: run.Adopted(), StartedAt: startedAt}
	if st := run.StartTime(); st > 0 {
		session.PIDStartTime = time.UnixMilli(st)
	}
	_, err := m.db.UpsertBrowserSession(ctx, session)
	return err
}

// upstreamWait bounds the wait for a new mux's browser connection when the caller's context has no deadline.
const upstreamWait = 15 * time.Second

// waitUpstream polls until mx is connected to its browser, its Serve ends, or the bound passes.
func waitUpstream(ctx context.Context, mx *mux.Mux, served <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, upstreamWait)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !mx.Stats().Upstream {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-served:
			return errors.New("the mux stopped")
		case <-tick.C:
		}
	}
	return nil
}

// saveOwnership persists a mux's ownership snapshot; the mux calls it from one goroutine, in order.
func (m *Manager) saveOwnership(key string, owners map[string][]string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.db.ReplaceOwnership(ctx, key, owners); err != nil {
		m.log.Error().Err(err).Str("browser", key).Msg("save tab ownership")
	}
}

// listenPort binds key's port from the registry on 127.0.0.1. A registered port that another program took
// meanwhile is given up and a fresh one allocated (every endpoint is handed out by the manager, so nothing
// outside it remembers the old number).
func (m *Manager) listenPort(ctx context.Context, key string) (net.Listener, int, error) {
	for attempt := 0; attempt < 2; attempt++ {
		port, err := m.db.AllocatePort(ctx, key, m.cfg.ProxyPortBase, portFree)
		if err != nil {
			return nil, 0, err
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			return ln, port, nil
		}
		m.log.Warn().Err(err).Int("port", port).Str("browser", key).Msg("registered port is taken; allocating another")
		if err := m.db.ReleasePort(ctx, key); err != nil {
			return nil, 0, err
		}
	}
	return nil, 0, fmt.Errorf("%w: no port could be bound for %s", ErrUnavailable, key)
}

// portFree is the registry's bind test.
func portFree(port int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// stop stops key's browser, if any, under its lock.
func (m *Manager) stop(ctx context.Context, key string) error {
	b := m.browserSlot(key)
	if err := b.acquire(ctx); err != nil {
		return err
	}
	defer b.release()
	b.lastStartFailed, b.died = false, false
	if l := b.cur.Load(); l != nil {
		m.teardownLocked(b, l)
	}
	return m.db.ClearRelaunches(ctx, key)
}

// teardownLocked ends l's mux and stops its browser (bounded), then records it stopped. The caller holds
// b's lock.
func (m *Manager) teardownLocked(b *browser, l *live) {
	l.cancel()
	<-l.served
	ctx, cancel := context.WithTimeout(context.Background(), stopBound+time.Second)
	defer cancel()
	if err := l.run.Stop(ctx); err != nil {
		m.log.Warn().Err(err).Str("browser", b.key).Msg("stop browser")
	}
	b.cur.CompareAndSwap(l, nil)
	if b.retiring == l {
		b.retiring = nil
	}
	if err := m.db.MarkBrowserStopped(ctx, b.key, time.Now()); err != nil && !errors.Is(err, state.ErrNotFound) {
		m.log.Error().Err(err).Str("browser", b.key).Msg("record browser stopped")
	}
	if err := m.db.ReplaceOwnership(ctx, b.key, nil); err != nil && !errors.Is(err, state.ErrNotFound) {
		m.log.Error().Err(err).Str("browser", b.key).Msg("clear tab ownership")
	}
	m.log.Info().Str("browser", b.key).Msg("browser stopped")
}

// stopAll stops every running browser concurrently, each bounded, the whole within overall.
func (m *Manager) stopAll(overall time.Duration) {
	slots := m.slots()
	ctx, cancel := context.WithTimeout(context.Background(), overall)
	defer cancel()
	var wg sync.WaitGroup
	for _, b := range slots {
		wg.Go(func() {
			if err := b.acquire(ctx); err != nil {
				return
			}
			defer b.release()
			if l := b.cur.Load(); l != nil {
				m.teardownLocked(b, l)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		m.log.Error().Msg("quit barrier: browsers still stopping at the overall bound; exiting anyway")
	}
}

// detachAll ends every mux but leaves the browsers running, for the next manager to adopt.
func (m *Manager) detachAll() {
	for _, b := range m.slots() {
		if l := b.cur.Load(); l != nil {
			l.cancel()
			<-l.served
			if r, ok := l.run.(interface{ Release() }); ok {
				r.Release() // stop watching the browser without stopping it
			}
		}
	}
}

// slots returns every browser slot.
func (m *Manager) slots() []*browser {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*browser, 0, len(m.browsers))
	for _, b := range m.browsers {
		out = append(out, b)
	}
	return out
}
