package browsers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"vibebrowser/mux/errdefs"
)

// stopBound is the per-browser bound of a stop: Browser.close, SIGTERM, SIGKILL of the group all fit in it.
const stopBound = 5 * time.Second

// Ensure returns sp's running browser, starting it when it is stopped or dead. It holds sp's lock, so
// concurrent calls for one store start one browser and other stores are never blocked.
func (f *Fleet) Ensure(ctx context.Context, sp Spec) (*Instance, error) {
	return f.ensureIn(ctx, f.slot(sp.Key), func(context.Context) (Spec, error) { return sp, nil })
}

// ensureIn is ensure in s, the slot of the Spec that load reads; load runs only when the browser must
// start, so a client connecting to a running browser costs no database read. The endpoint front keeps its
// own slot: a client that waited for the lock while the store was removed is refused instead of starting
// a browser for it.
func (f *Fleet) ensureIn(ctx context.Context, s *slot, load func(context.Context) (Spec, error)) (*Instance, error) {
	if f.closing.Load() {
		return nil, errdefs.ErrShuttingDown
	}
	// Even the fast path takes the store's lock: the idle sweep decides under it, so a browser handed out
	// here is never stopped by a sweep that began before the caller connected.
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	if f.closing.Load() {
		return nil, errdefs.ErrShuttingDown
	}
	in := s.cur.Load()
	switch s.stateLocked(in) {
	case slotGone:
		return nil, fmt.Errorf("the store was removed: %w", errdefs.ErrNotFound)
	case slotRunning, slotRetiring:
		in.lastEnsure.Store(time.Now().UnixNano())
		return in, nil
	}
	sp, err := load(ctx)
	if err != nil {
		return nil, err
	}
	if in != nil { // died; its watcher has not cleaned up yet
		f.buryLocked(s, in)
	}
	if err := s.budget.spend(ctx, sp); err != nil {
		return nil, err
	}
	in, err = f.startLocked(s, sp)
	s.budget.startDone(err == nil)
	if err != nil {
		f.startFailures.WithLabelValues(string(sp.Backend)).Inc()
		return nil, err
	}
	in.lastEnsure.Store(time.Now().UnixNano())
	f.install(s, in)
	return in, nil
}

// startContext bounds a start by VIBE_BROWSER_START_TIMEOUT_S on the daemon's context (not a caller's: a
// client that gives up does not abort a start others may be waiting for).
func (f *Fleet) startContext() (context.Context, context.CancelFunc) {
	if f.cfg.StartTimeout > 0 {
		return context.WithTimeout(f.ctx, f.cfg.StartTimeout)
	}
	return context.WithCancel(f.ctx)
}

// startLocked launches sp's browser and its mux in s. The caller holds s's lock. The start is bounded (see
// startContext); a half-started browser is torn down on failure.
func (f *Fleet) startLocked(s *slot, sp Spec) (*Instance, error) {
	ctx, cancel := f.startContext()
	defer cancel()
	if f.hooks.Starting != nil {
		if err := f.hooks.Starting(ctx, sp); err != nil {
			f.log.Warn().Err(err).Str("browser", sp.Key).Msg("before the start")
		}
	}
	if err := f.snaps.readyProfileLocked(ctx, s, sp); err != nil {
		return nil, err
	}
	for _, dir := range []string{f.cfg.path("profiles", sp.Slug), f.cfg.path("downloads", sp.Slug)} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
	}
	began := time.Now()
	be, err := f.backendFor(sp)
	if err != nil {
		return nil, err
	}
	h, err := f.launch(ctx, be, sp)
	if err != nil && ownsProfile(sp) && profileFault(err) && ctx.Err() == nil {
		h, err = f.snaps.launchInSnapshotLocked(ctx, sp, be, err)
	}
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %s was not ready within VIBE_BROWSER_START_TIMEOUT_S=%d; it was stopped: %v",
				errdefs.ErrStartTimeout, sp.Name, int(f.cfg.StartTimeout.Seconds()), err)
		}
		if errdefs.Class(err) != nil {
			return nil, fmt.Errorf("start %s: %w", sp.Name, err) // a class the API answers as it is
		}
		return nil, fmt.Errorf("%w: %s: %v", errdefs.ErrStartFailed, sp.Name, err)
	}
	in, err := f.attachMux(ctx, s, sp, be, h, nil)
	if err == nil {
		// The store may have been taken from this host while its browser launched (SPEC §19): then it is
		// stopped before any client is served.
		if err = f.mayRun(ctx, sp); err != nil {
			in.cancel()
			<-in.served
		}
	}
	if err != nil {
		stopCtx, cancel := context.WithTimeout(context.Background(), stopBound)
		defer cancel()
		_ = h.Stop(stopCtx)
		return nil, err
	}
	f.starts.WithLabelValues(string(sp.Backend)).Inc()
	f.log.Info().Str("browser", sp.Key).Str("slug", sp.Slug).Int("pid", h.PID()).Int("port", in.port).
		Int64("took_ms", time.Since(began).Milliseconds()).Msg("browser started")
	return in, nil
}

// launch launches sp's browser on be, if it may run here now (Hooks.MayRun).
func (f *Fleet) launch(ctx context.Context, be backend, sp Spec) (handle, error) {
	if err := f.mayRun(ctx, sp); err != nil {
		return nil, err
	}
	return be.launch(ctx, sp)
}

// mayRun asks Hooks.MayRun whether sp's browser may run here now.
func (f *Fleet) mayRun(ctx context.Context, sp Spec) error {
	if f.hooks.MayRun == nil {
		return nil
	}
	return f.hooks.MayRun(ctx, sp)
}

// install makes in s's running Instance and starts its death watcher. The caller holds s's lock.
func (f *Fleet) install(s *slot, in *Instance) {
	s.installLocked(in)
	f.wg.Go(func() { f.watch(s, in) })
}

// Start is a person's explicit start of sp's browser: it forgives the relaunch budget first, then ensures.
func (f *Fleet) Start(ctx context.Context, sp Spec) (*Instance, error) {
	s := f.slot(sp.Key)
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	err := s.budget.forgive(ctx)
	s.release()
	if err != nil {
		return nil, err
	}
	return f.Ensure(ctx, sp)
}

// Stop stops key's browser, if any, under its lock. An explicit stop resets the relaunch budget.
func (f *Fleet) Stop(ctx context.Context, key string) error {
	s := f.slot(key)
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	if in := s.cur.Load(); in != nil {
		f.teardownLocked(s, in)
	}
	return s.budget.reset(ctx)
}

// Remove stops key's browser and runs remove under its lock (the daemon deletes the store's files and its
// record). When remove succeeds nothing starts in the slot again, and its endpoint is unbound after the
// lock is released, so a client that waited for the lock is refused and its request ends.
func (f *Fleet) Remove(ctx context.Context, key string, remove func(context.Context) error) error {
	s := f.slot(key)
	if err := s.acquire(ctx); err != nil {
		return err
	}
	if in := s.cur.Load(); in != nil {
		f.teardownLocked(s, in)
	}
	err := remove(ctx)
	var ep *endpoint
	if err == nil {
		s.removeLocked()
		ep = s.ep.Swap(nil)
	}
	s.release()
	if err != nil {
		return err
	}
	f.Forget(key)
	if ep != nil {
		ep.close()
	}
	return nil
}

// teardownLocked ends in's mux and stops its browser (bounded), then records it stopped. The caller holds
// s's lock. The mux's version object is kept first (a browser reached over ws:// reports it only once
// connected), for the endpoint to answer discovery from while the browser sleeps.
func (f *Fleet) teardownLocked(s *slot, in *Instance) {
	f.saveVersion(s.key, in.mux)
	if in.logins != nil {
		in.logins.close(in.healthy()) // a live browser's jar is checkpointed once more, through its mux
	}
	in.cancel()
	<-in.served
	ctx, cancel := context.WithTimeout(context.Background(), stopBound+time.Second)
	defer cancel()
	// A browser that died on its own (buried), or hung and is being retired, is no clean stop: no snapshot of it.
	clean := !exited(in.browser) && !s.retiringLocked(in)
	if err := in.browser.Stop(ctx); err != nil {
		f.log.Warn().Err(err).Str("browser", s.key).Msg("stop browser")
	} else if clean {
		f.snaps.afterStopLocked(s, in.spec)
	}
	s.clearLocked(in)
	if err := f.db.Browsers().MarkStopped(ctx, s.key, time.Now()); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		f.log.Error().Err(err).Str("browser", s.key).Msg("record browser stopped")
	}
	if err := f.db.Browsers().ReplaceOwnership(ctx, s.key, nil); err != nil && !errors.Is(err, errdefs.ErrNotFound) {
		f.log.Error().Err(err).Str("browser", s.key).Msg("clear tab ownership")
	}
	f.log.Info().Str("browser", s.key).Msg("browser stopped")
}

// stopAll stops every running browser concurrently, each bounded, the whole within overall.
func (f *Fleet) stopAll(overall time.Duration) {
	slots := f.slots()
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
				f.teardownLocked(s, in)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		f.log.Error().Msg("quit barrier: browsers still stopping at the overall bound; exiting anyway")
	}
}

// detachAll ends every mux but leaves the browsers running, for the next manager to adopt.
func (f *Fleet) detachAll() {
	for _, s := range f.slots() {
		if in := s.cur.Load(); in != nil {
			if in.logins != nil {
				in.logins.close(in.healthy())
			}
			in.cancel()
			<-in.served
			in.browser.Release() // stop watching the browser without stopping it
		}
	}
}
