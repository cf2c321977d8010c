package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"vibebrowser/manager/apierr"
	"vibebrowser/mux"
	"vibebrowser/state"
)

// attachMux runs a mux for h behind s's endpoint (binding it if it is not bound). ownership is the adopted
// browser's saved tab ownership (nil for a fresh launch). The caller holds s's lock.
func (m *Manager) attachMux(ctx context.Context, s *slot, sp spec, h handle, ownership map[string][]string) (*instance, error) {
	be, err := m.backendFor(sp)
	if err != nil {
		return nil, err
	}
	ep, err := m.endpointLocked(ctx, s, sp)
	if err != nil {
		return nil, err
	}
	if !h.Adopted() {
		// A fresh browser has none of the old tabs; forget their owners.
		if err := m.db.ReplaceOwnership(ctx, sp.key, nil); err != nil {
			return nil, err
		}
	}
	var hooks mux.Hooks
	hooks.OwnershipChanged = func(o map[string][]string) { m.saveOwnership(sp.key, o) }
	hooks.Downloaded = func(d mux.Download) { m.recordDownload(sp, d) }
	var mx *mux.Mux
	if be.relaunchable() {
		hooks.Relaunch = func(ctx context.Context) (string, error) { return m.relaunchHung(ctx, s, mx) }
	}
	// The knobs' 0 means off (VIBE_TAB_CAP=0: no cap; VIBE_MUX_GRACE_S=0: tabs close at once); the mux's 0
	// means its default, and off is mux.Off.
	tabCap, grace := m.cfg.TabCap, m.cfg.MuxGrace
	if tabCap == 0 {
		tabCap = mux.Off
	}
	if grace == 0 {
		grace = mux.Off
	}
	mx, err = mux.New(mux.Config{
		Upstream:    h.HTTPEndpoint(),
		Port:        ep.port,
		Token:       sp.token,
		DownloadDir: m.cfg.path("downloads", sp.slug),
		Home:        m.cfg.Home,
		AgentDir:    m.cfg.path("agents", sp.slug),
		TabCap:      tabCap,
		MaxClients:  m.cfg.MuxMaxClients,
		Grace:       grace,
		FreshLaunch: !h.Adopted(),
		Ownership:   ownership,
		Hooks:       hooks,
		// Zero unless a test shortened them:
		PingInterval:   m.cfg.muxTiming.pingInterval,
		PongTimeout:    m.cfg.muxTiming.pongTimeout,
		ReconnectMin:   m.cfg.muxTiming.reconnectMin,
		ReconnectMax:   m.cfg.muxTiming.reconnectMax,
		ReconnectTries: m.cfg.muxTiming.reconnectTries,
		Log:            m.root.With().Str("component", "mux").Str("browser", sp.key).Logger(),
	})
	if err != nil {
		return nil, fmt.Errorf("mux for %s: %w", sp.name, err)
	}
	muxCtx, cancel := context.WithCancel(context.Background())
	in := &instance{spec: sp, browser: h, mux: mx, port: ep.port, startedAt: time.Now(), cancel: cancel, served: make(chan struct{})}
	m.wg.Go(func() {
		defer close(in.served)
		if err := mx.Serve(muxCtx); err != nil && muxCtx.Err() == nil {
			m.log.Error().Err(err).Str("browser", sp.key).Msg("mux stopped")
		}
	})
	// A client's first command must find the browser connected: wait for the mux's upstream before handing
	// the endpoint out.
	if err := waitUpstream(ctx, mx, in.served); err != nil {
		cancel()
		<-in.served
		return nil, fmt.Errorf("%w: the mux of %s did not connect to the browser: %v", apierr.ErrStartFailed, sp.name, err)
	}
	if err := m.recordRunning(ctx, sp, h, in.startedAt); err != nil {
		cancel()
		<-in.served
		return nil, err
	}
	m.saveVersion(sp.key, mx)
	return in, nil
}

// recordRunning records sp's browser as running on h, so the next manager can adopt it.
func (m *Manager) recordRunning(ctx context.Context, sp spec, h handle, startedAt time.Time) error {
	session := state.BrowserSession{Key: sp.key, PID: h.PID(), CDPEndpoint: h.HTTPEndpoint(),
		Status: state.BrowserRunning, Adopted: h.Adopted(), StartedAt: startedAt}
	if st := h.StartTime(); st > 0 {
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
