package browsers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/mux"
)

// watch acts as soon as in's browser dies. A crash its backend repairs (a Chromium killed by a signal) is
// relaunched on its profile behind the same mux, so connected clients stay connected and every task gets its
// restored tabs back; any other death (a clean exit: a user closed the window), or a relaunch that fails or
// is over budget, is buried, so a dead browser frees its port and shows as stopped without waiting for the
// next ensure. watch returns when in is torn down or replaced any other way.
func (f *Fleet) watch(s *slot, in *Instance) {
	select {
	case <-in.served:
		return
	case <-in.browser.Done():
	}
	if err := s.acquire(f.ctx); err != nil {
		return // the daemon is quitting; the barrier stops what is left
	}
	defer s.release()
	if s.stateLocked(in) != slotDead {
		return // stopped or replaced meanwhile
	}
	if be, err := f.backendFor(in.spec); err == nil && be.crashed(in.browser) && !s.retiringLocked(in) && !f.closing.Load() {
		err := f.relaunchCrashedLocked(s, in)
		if err == nil {
			return
		}
		f.log.Error().Err(err).Str("browser", s.key).Msg("crashed browser not relaunched")
	}
	f.buryLocked(s, in)
}

// buryLocked cleans up after a browser that died under us (its mux, its state) and charges the death to the
// relaunch budget. The caller holds s's lock.
func (f *Fleet) buryLocked(s *slot, dead *Instance) {
	uptime := time.Since(dead.startedAt)
	f.note(zerolog.WarnLevel, api.EventBrowserDied, s.key, api.Event{Message: fmt.Sprintf(
		"%s died after %s (pid %d)", dead.spec.Name, uptime.Round(time.Second), dead.browser.PID())})
	s.budget.death(uptime)
	f.teardownLocked(s, dead)
}

// relaunchCrashedLocked relaunches a crashed browser behind its mux and waits for the mux to reconnect.
// The caller holds s's lock.
func (f *Fleet) relaunchCrashedLocked(s *slot, dead *Instance) error {
	ctx, cancel := f.startContext()
	defer cancel()
	dead.mux.Replacing() // not to reach the new browser before it is named: it listens where the old one did
	next, err := f.relaunchLocked(ctx, s, dead, "crashed")
	if err != nil {
		return err
	}
	next.mux.Relaunched(next.browser.Endpoint())
	if err := waitUpstream(ctx, next.mux, next.served); err != nil {
		f.abandonRelaunchLocked(s, next)
		return err
	}
	f.install(s, next)
	return nil
}

// relaunchHung is the mux relaunch hook of a relaunchable backend: the mux found its browser unreachable on
// every reconnect attempt while the process may still be running (hung). Under the store's lock the process
// is stopped and a fresh one launched on the profile; the mux dials the returned endpoint itself. When the
// relaunch is refused (over budget) or fails, the browser is buried instead, after the mux has let go.
func (f *Fleet) relaunchHung(ctx context.Context, s *slot, mx *mux.Mux) (string, error) {
	if err := s.acquire(ctx); err != nil {
		return "", err
	}
	defer s.release()
	in := s.cur.Load()
	if in == nil || in.mux != mx || f.closing.Load() {
		return "", errors.New("this browser is being stopped or replaced")
	}
	sctx, cancel := f.startContext()
	defer cancel()
	defer context.AfterFunc(ctx, cancel)() // the mux stopping ends the relaunch too
	next, err := f.relaunchLocked(sctx, s, in, "unreachable after every reconnect attempt")
	if err != nil {
		f.log.Error().Err(err).Str("browser", s.key).Msg("hung browser not relaunched: stopping it")
		s.retireLocked(in)
		// Burying waits for the mux to end, and the mux waits for this hook: bury once the hook returned.
		f.wg.Go(func() {
			if s.acquire(f.ctx) == nil {
				defer s.release()
				if s.cur.Load() == in {
					f.buryLocked(s, in)
				}
			}
		})
		in.cancel()
		return "", err
	}
	f.install(s, next)
	return next.browser.Endpoint(), nil
}

// relaunchLocked replaces old's browser, crashed or hung, with a fresh one on its profile (Chromium restores
// its last session), charged to the relaunch budget. The new browser is recorded as running and shares
// old's mux; the caller points the mux at it and installs it. The caller holds s's lock.
func (f *Fleet) relaunchLocked(ctx context.Context, s *slot, old *Instance, why string) (*Instance, error) {
	sp := old.spec
	uptime := time.Since(old.startedAt)
	f.log.Warn().Str("browser", sp.Key).Int("pid", old.browser.PID()).Str("why", why).
		Int64("uptime_ms", uptime.Milliseconds()).Msg("relaunching the browser behind its mux")
	s.budget.death(uptime)
	if err := s.budget.spend(ctx, sp); err != nil {
		return nil, err
	}
	// The old process group goes first: a hung browser, or renderers of a crashed one on their way out.
	if err := old.browser.Stop(ctx); err != nil {
		return nil, err
	}
	be, err := f.backendFor(sp)
	if err != nil {
		return nil, err
	}
	h, err := f.launch(ctx, be, sp)
	s.budget.startDone(err == nil)
	if err != nil {
		f.startFailures.WithLabelValues(string(sp.Backend)).Inc()
		return nil, err
	}
	next := &Instance{spec: sp, browser: h, mux: old.mux, port: old.port, startedAt: time.Now(), cancel: old.cancel,
		served: old.served, logins: old.logins}
	next.lastEnsure.Store(old.lastEnsure.Load())
	if err := f.recordRunning(ctx, sp, h, next.startedAt); err != nil {
		f.abandonRelaunchLocked(s, next)
		return nil, err
	}
	f.starts.WithLabelValues(string(sp.Backend)).Inc()
	f.note(zerolog.InfoLevel, api.EventBrowserRelaunched, sp.Key, api.Event{Message: fmt.Sprintf(
		"%s relaunched behind its mux (%s; pid %d, was %d)", sp.Name, why, h.PID(), old.browser.PID())})
	return next, nil
}

// abandonRelaunchLocked stops a relaunched browser that could not be put to use; the next start of the
// store counts as a relaunch.
func (f *Fleet) abandonRelaunchLocked(s *slot, next *Instance) {
	ctx, cancel := context.WithTimeout(context.Background(), stopBound)
	defer cancel()
	_ = next.browser.Stop(ctx)
	s.budget.startDone(false)
}
