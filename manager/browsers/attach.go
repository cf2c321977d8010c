package browsers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/mux"
	"vibebrowser/mux/downloads"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// attachMux runs a mux for h, started by be, behind s's endpoint (binding it if it is not bound). ownership is the adopted
// browser's saved tab ownership (nil for a fresh launch). The caller holds s's lock.
func (f *Fleet) attachMux(ctx context.Context, s *slot, sp Spec, be backend, h handle, ownership map[string][]string) (*Instance, error) {
	ep, err := f.endpointLocked(ctx, s, sp)
	if err != nil {
		return nil, err
	}
	users, err := f.cfg.Users(sp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errdefs.ErrUnavailable, err)
	}
	browserUser, err := f.cfg.browserUser(sp, h, users)
	if err != nil {
		return nil, fmt.Errorf("%w: who %s's browser runs as: %v", errdefs.ErrUnavailable, sp.Name, err)
	}
	if !h.Adopted() {
		// A fresh browser has none of the old tabs; forget their owners.
		if err := f.db.Browsers().ReplaceOwnership(ctx, sp.Key, nil); err != nil {
			return nil, err
		}
	}
	var hooks mux.Hooks
	hooks.OwnershipChanged = func(o map[string][]string) { f.saveOwnership(sp.Key, o) }
	if f.hooks.Downloaded != nil {
		hooks.Downloaded = func(d downloads.Download) { f.hooks.Downloaded(sp, d) }
	}
	if f.hooks.Deliver != nil {
		hooks.Deliver = func(d downloads.Download, own *downloads.OwnCopy) (string, bool) { return f.hooks.Deliver(sp, d, own) }
	}
	if f.hooks.DownloadRoom != nil {
		hooks.DownloadRoom = func(dir string) int64 { return f.hooks.DownloadRoom(sp, dir) }
	}
	if f.hooks.DownloadCut != nil {
		hooks.DownloadCut = func(d downloads.Download) { f.hooks.DownloadCut(sp, d) }
	}
	if f.hooks.Timeline != nil {
		hooks.Timeline = func(ev mux.TimelineEvent) { f.hooks.Timeline(sp, ev) }
	}
	var lk *loginKeeper
	if f.cfg.LoginCheckpoint > 0 && checkpointed(sp) {
		// With checkpoints off nothing is set back either: an old checkpoint would bring back stale values.
		lk = f.logins.keeper(sp, browserUser)
		hooks.Launched = lk.launched
	}
	var mx *mux.Mux
	if be.relaunchable() {
		hooks.Relaunch = func(ctx context.Context) (string, error) { return f.relaunchHung(ctx, s, mx) }
	}
	// The knobs' 0 means off (VIBE_TAB_CAP=0: no cap; VIBE_MUX_GRACE_S=0: tabs close at once); the mux's 0
	// means its default, and off is mux.Off.
	tabCap, grace := f.cfg.TabCap, f.cfg.MuxGrace
	if tabCap == 0 {
		tabCap = mux.Off
	}
	if grace == 0 {
		grace = mux.Off
	}
	t := f.cfg.MuxTiming
	mx, err = mux.New(mux.Config{
		Upstream:    h.Endpoint(),
		Port:        ep.port,
		Token:       sp.Token,
		DownloadDir: f.cfg.path("downloads", sp.Slug),
		Home:        f.cfg.Home,
		AgentDir:    f.cfg.path("agents", sp.Slug),
		Agent:       users.Agent,
		Browser:     browserUser,
		TabCap:      tabCap,
		MaxClients:  f.cfg.MuxMaxClients,
		// Every task of the store may use its aux session (SPEC §20), from any host of a cluster.
		SharedClients: []string{api.AuxClient},
		Grace:         grace,
		FreshLaunch:   !h.Adopted(),
		// A browser whose profile is not the manager's may have been restarted or used elsewhere since the
		// last connection: its login's restore (lacking cookies only, loginKeeper.restore) runs at each.
		LaunchedEachConnection: !ownsProfile(sp),
		Ownership:              ownership,
		Hooks:                  hooks,
		// Zero unless a test shortened them:
		PingInterval:   t.PingInterval,
		PongTimeout:    t.PongTimeout,
		ReconnectMin:   t.ReconnectMin,
		ReconnectMax:   t.ReconnectMax,
		ReconnectTries: t.ReconnectTries,
		Log:            f.root.With().Str("component", "mux").Str("browser", sp.Key).Logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("mux for %s: %w", sp.Name, err)
	}
	if lk != nil {
		lk.mx = mx
	}
	muxCtx, cancel := context.WithCancel(context.Background())
	in := &Instance{spec: sp, browser: h, mux: mx, port: ep.port, startedAt: time.Now(), cancel: cancel, served: make(chan struct{}),
		logins: lk}
	f.wg.Go(func() {
		defer close(in.served)
		if err := mx.Serve(muxCtx); err != nil && muxCtx.Err() == nil {
			f.log.Error().Err(err).Str("browser", sp.Key).Msg("mux stopped")
		}
	})
	// A client's first command must find the browser connected: wait for the mux's upstream before handing
	// the endpoint out.
	if err := waitUpstream(ctx, mx, in.served); err != nil {
		cancel()
		<-in.served
		return nil, fmt.Errorf("%w: the mux of %s did not connect to the browser: %v", errdefs.ErrStartFailed, sp.Name, err)
	}
	if err := f.recordRunning(ctx, sp, h, in.startedAt); err != nil {
		cancel()
		<-in.served
		return nil, err
	}
	f.saveVersion(sp.Key, mx)
	if lk != nil {
		f.wg.Go(func() { lk.run(in.served) })
	}
	return in, nil
}

// recordRunning records sp's browser as running on h, so the next manager can adopt it.
func (f *Fleet) recordRunning(ctx context.Context, sp Spec, h handle, startedAt time.Time) error {
	session := state.BrowserSession{Key: sp.Key, PID: h.PID(), CDPEndpoint: h.Endpoint(),
		Status: state.BrowserRunning, Adopted: h.Adopted(), StartedAt: startedAt}
	if st := h.StartTime(); st > 0 {
		session.PIDStartTime = time.UnixMilli(st)
	}
	_, err := f.db.Browsers().UpsertSession(ctx, session)
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
func (f *Fleet) saveOwnership(key string, owners map[string][]string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.db.Browsers().ReplaceOwnership(ctx, key, owners); err != nil {
		f.log.Error().Err(err).Str("browser", key).Msg("save tab ownership")
	}
}
