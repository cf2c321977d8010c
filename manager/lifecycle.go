package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"vibebrowser/manager/apierr"
	"vibebrowser/state"
)

// stopBound is the per-browser bound of a stop: Browser.close, SIGTERM, SIGKILL of the group all fit in it.
const stopBound = 5 * time.Second

// ensure returns sp's running browser, starting it when it is stopped or dead. It holds sp's lock, so
// concurrent calls for one store start one browser and other stores are never blocked.
func (m *Manager) ensure(ctx context.Context, sp spec) (*instance, error) {
	return m.ensureIn(ctx, m.slot(sp.key), func(context.Context) (spec, error) { return sp, nil })
}

// ensureIn is ensure in s, the slot of the spec that load reads; load runs only when the browser must
// start, so a client connecting to a running browser costs no database read. The endpoint front keeps its
// own slot: a client that waited for the lock while the store was removed is refused instead of starting
// a browser for it.
func (m *Manager) ensureIn(ctx context.Context, s *slot, load func(context.Context) (spec, error)) (*instance, error) {
	if m.closing.Load() {
		return nil, apierr.ErrShuttingDown
	}
	// Even the fast path takes the store's lock: the idle sweep decides under it, so a browser handed out
	// here is never stopped by a sweep that began before the caller connected.
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if m.closing.Load() {
		return nil, apierr.ErrShuttingDown
	}
	if s.gone {
		return nil, fmt.Errorf("the store was removed: %w", state.ErrNotFound)
	}
	if in := s.current(); in != nil {
		in.lastEnsure.Store(time.Now().UnixNano())
		return in, nil
	}
	sp, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if dead := s.cur.Load(); dead != nil { // died; its watcher has not cleaned up yet
		m.buryLocked(s, dead)
	}
	if err := m.spend(ctx, s, sp); err != nil {
		return nil, err
	}
	in, err := m.startLocked(s, sp)
	s.budget.startDone(err == nil)
	if err != nil {
		m.metrics.startFailures.WithLabelValues(string(sp.backend)).Inc()
		return nil, err
	}
	in.lastEnsure.Store(time.Now().UnixNano())
	m.install(s, in)
	return in, nil
}

// startContext bounds a start by VIBE_BROWSER_START_TIMEOUT_S on the daemon's context (not a caller's: a
// client that gives up does not abort a start others may be waiting for).
func (m *Manager) startContext() (context.Context, context.CancelFunc) {
	if m.cfg.StartTimeout > 0 {
		return context.WithTimeout(m.ctx, m.cfg.StartTimeout)
	}
	return context.WithCancel(m.ctx)
}

// startLocked launches sp's browser and its mux in s. The caller holds s's lock. The start is bounded (see
// startContext); a half-started browser is torn down on failure.
func (m *Manager) startLocked(s *slot, sp spec) (*instance, error) {
	ctx, cancel := m.startContext()
	defer cancel()
	if err := m.writeWrapperFor(ctx, sp); err != nil {
		m.log.Warn().Err(err).Str("browser", sp.key).Msg("wrapper not written")
	}
	for _, dir := range []string{m.cfg.path("profiles", sp.slug), m.cfg.path("downloads", sp.slug)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	h, err := m.launch(ctx, sp)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %s was not ready within VIBE_BROWSER_START_TIMEOUT_S=%d; it was stopped: %v",
				apierr.ErrStartTimeout, sp.name, int(m.cfg.StartTimeout.Seconds()), err)
		}
		if status, _ := apierr.Status(err); status != http.StatusInternalServerError {
			return nil, fmt.Errorf("start %s: %w", sp.name, err) // a class the API answers as it is
		}
		return nil, fmt.Errorf("%w: %s: %v", apierr.ErrStartFailed, sp.name, err)
	}
	in, err := m.attachMux(ctx, s, sp, h, nil)
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), stopBound)
		defer cancel()
		_ = h.Stop(stopCtx)
		return nil, err
	}
	m.metrics.starts.WithLabelValues(string(sp.backend)).Inc()
	m.log.Info().Str("browser", sp.key).Str("slug", sp.slug).Int("pid", h.PID()).Int("port", in.port).
		Int64("took_ms", time.Since(began).Milliseconds()).Msg("browser started")
	return in, nil
}

// launch starts sp's browser through its backend.
func (m *Manager) launch(ctx context.Context, sp spec) (handle, error) {
	be, err := m.backendFor(sp)
	if err != nil {
		return nil, err
	}
	return be.launch(ctx, sp)
}

// install makes in s's running instance and starts its death watcher.
func (m *Manager) install(s *slot, in *instance) {
	s.cur.Store(in)
	m.wg.Go(func() { m.watch(s, in) })
}

// stop stops key's browser, if any, under its lock. An explicit stop resets the relaunch budget.
func (m *Manager) stop(ctx context.Context, key string) error {
	s := m.slot(key)
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if in := s.cur.Load(); in != nil {
		m.teardownLocked(s, in)
	}
	return s.budget.reset(ctx)
}

// teardownLocked ends in's mux and stops its browser (bounded), then records it stopped. The caller holds
// s's lock. The mux's version object is kept first (a browser reached over ws:// reports it only once
// connected), for the endpoint to answer discovery from while the browser sleeps.
func (m *Manager) teardownLocked(s *slot, in *instance) {
	m.saveVersion(s.key, in.mux)
	in.cancel()
	<-in.served
	ctx, cancel := context.WithTimeout(context.Background(), stopBound+time.Second)
	defer cancel()
	if err := in.browser.Stop(ctx); err != nil {
		m.log.Warn().Err(err).Str("browser", s.key).Msg("stop browser")
	}
	s.cur.CompareAndSwap(in, nil)
	if s.retiring == in {
		s.retiring = nil
	}
	if err := m.db.MarkBrowserStopped(ctx, s.key, time.Now()); err != nil && !errors.Is(err, state.ErrNotFound) {
		m.log.Error().Err(err).Str("browser", s.key).Msg("record browser stopped")
	}
	if err := m.db.ReplaceOwnership(ctx, s.key, nil); err != nil && !errors.Is(err, state.ErrNotFound) {
		m.log.Error().Err(err).Str("browser", s.key).Msg("clear tab ownership")
	}
	m.log.Info().Str("browser", s.key).Msg("browser stopped")
}

// stopAll stops every running browser concurrently, each bounded, the whole within overall.
func (m *Manager) stopAll(overall time.Duration) {
	slots := m.slots()
	ctx, cancel := context.WithTimeout(context.Background(), overall)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range slots {
		wg.Go(func() {
			if err := s.acquire(ctx); err != nil {
				return
			}
			defer s.release()
			if in := s.cur.Load(); in != nil {
				m.teardownLocked(s, in)
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
	for _, s := range m.slots() {
		if in := s.cur.Load(); in != nil {
			in.cancel()
			<-in.served
			in.browser.Release() // stop watching the browser without stopping it
		}
	}
}
