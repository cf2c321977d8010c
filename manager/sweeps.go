package manager

// The daemon's sweeps: idle browsers stopped, and the browser-use daemons of tasks gone reaped.

import (
	"context"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/reaper"
)

// reaperConfig describes this manager's runtime dir to the reaper: the known slugs and which tasks are
// active (holding states or waiting, lease valid), both answered from state at the time of the pass.
func (m *Manager) reaperConfig(ctx context.Context) reaper.Config {
	return reaper.Config{
		Dir: m.cfg.Path("r"),
		Slugs: func() []string {
			stores, err := m.db.ListStores(ctx)
			if err != nil {
				m.log.Error().Err(err).Msg("reaper: list stores")
			}
			slugs := make([]string, 0, len(stores))
			for _, s := range stores {
				slugs = append(slugs, s.Slug)
			}
			return slugs
		},
		Active: func(task8 string) bool {
			tasks, err := m.db.ListActiveTasks(ctx, time.Now())
			if err != nil {
				m.log.Error().Err(err).Msg("reaper: list tasks")
				return true // never stop a daemon on a guess
			}
			for _, t := range tasks {
				if len(t.ID) >= 8 && strings.EqualFold(t.ID[:8], task8) {
					return true
				}
			}
			return false
		},
		Log: m.root.With().Str("component", "reaper").Logger(),
	}
}

// reaper is the reaper's view of the runtime dir, and whether it may act there: not with the kill switch
// set, nor in a runtime dir that is not ours.
func (m *Manager) reaper(ctx context.Context) (reaper.Config, bool) {
	return m.reaperConfig(ctx), !m.cfg.DisableReaper && m.ownsRuntime
}

// Reap runs one pass unless the kill switch is set or the runtime dir is not ours.
func (m *Manager) Reap(ctx context.Context) (reaper.Result, error) {
	if m.cfg.DisableReaper {
		return reaper.Result{}, nil
	}
	if !m.ownsRuntime {
		return reaper.Result{}, nil
	}
	res, err := reaper.Pass(ctx, m.reaperConfig(ctx))
	if len(res.Killed) > 0 || len(res.Removed) > 0 {
		m.log.Info().Strs("killed", res.Killed).Strs("removed", res.Removed).Msg("reaper pass")
	}
	return res, err
}

// reapLoop runs a pass every VIBE_REAP_INTERVAL_S.
func (m *Manager) reapLoop(ctx context.Context) {
	if m.cfg.DisableReaper || !m.ownsRuntime {
		return
	}
	tick := time.NewTicker(m.cfg.ReapInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if _, err := m.Reap(ctx); err != nil && ctx.Err() == nil {
				m.log.Error().Err(err).Msg("reaper pass")
			}
		}
	}
}

// idleLoop stops browsers nobody uses (SPEC §4.7): every minute, or every half idle time when that is
// shorter. VIBE_BROWSER_IDLE_S=0 disables it.
func (m *Manager) idleLoop(ctx context.Context) {
	if m.cfg.Idle <= 0 {
		return
	}
	every := min(time.Minute, m.cfg.Idle/2)
	tick := time.NewTicker(max(every, 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			m.sweepIdle(ctx)
		}
	}
}

// sweepIdle stops every running browser that no task holds and nothing uses (browsers.Fleet.StopIdle). The
// wrapper stays: the next call restarts the browser.
func (m *Manager) sweepIdle(ctx context.Context) {
	now := time.Now()
	tasks, err := m.db.ListActiveTasks(ctx, now)
	if err != nil {
		m.log.Error().Err(err).Msg("idle sweep: list tasks")
		return
	}
	held := map[string]bool{}
	for _, t := range tasks {
		if t.HoldsBrowser(now) {
			key := t.StoreID
			if key == "" {
				key = api.WebKey // a task with no store uses the web browser
			}
			held[key] = true
		}
	}
	m.fleet.StopIdle(ctx, held)
}
