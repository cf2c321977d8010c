package manager

import (
	"context"
	"net/http"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/reaper"
)

// reaperConfig describes this manager's runtime dir to the reaper: the known slugs and which tasks are
// active (holding states or waiting, lease valid), both answered from state at the time of the pass.
func (m *Manager) reaperConfig(ctx context.Context) reaper.Config {
	return reaper.Config{
		Dir: m.cfg.path("r"),
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

// reap runs one pass unless the kill switch is set or the runtime dir is not ours.
func (m *Manager) reap(ctx context.Context) (reaper.Result, error) {
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
			if _, err := m.reap(ctx); err != nil && ctx.Err() == nil {
				m.log.Error().Err(err).Msg("reaper pass")
			}
		}
	}
}

// taskEnded stops the browser-use daemons of a task that completed, failed, was deleted or lost its lease,
// and forgets its last lease write (see touchTask).
func (m *Manager) taskEnded(ctx context.Context, id string) {
	m.forgetLease(id)
	if m.cfg.DisableReaper || !m.ownsRuntime || len(id) < 8 {
		return
	}
	res, err := reaper.StopTask(ctx, m.reaperConfig(ctx), id[:8])
	if err != nil {
		m.log.Error().Err(err).Str("task", id).Msg("stop the daemons of an ended task")
	}
	if len(res.Killed) > 0 {
		m.log.Info().Str("task", id).Strs("killed", res.Killed).Msg("stopped the daemons of an ended task")
	}
}

func (m *Manager) handleReap(r *http.Request) (any, error) {
	res, err := m.reap(r.Context())
	if err != nil {
		return nil, err
	}
	return api.ReapResult{Killed: nonNil(res.Killed), Removed: nonNil(res.Removed), Kept: nonNil(res.Kept)}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// leaseCheckEvery is how often expired task leases are looked for.
const leaseCheckEvery = 15 * time.Second

// leaseLoop stops the daemons of a task as soon as its lease expires (a task the app forgot, or whose shim
// calls stopped): the periodic reaper pass would find them too, but only at its interval.
func (m *Manager) leaseLoop(ctx context.Context) {
	if m.cfg.DisableReaper || !m.ownsRuntime {
		return
	}
	tick := time.NewTicker(min(leaseCheckEvery, max(m.cfg.TaskLease/2, time.Second)))
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			tasks, err := m.db.ListTasks(ctx)
			if err != nil {
				m.log.Error().Err(err).Msg("lease check: list tasks")
				continue
			}
			for _, t := range tasks {
				if t.Status.Active() && t.LeaseUntil.After(last) && !t.LeaseUntil.After(now) {
					m.log.Info().Str("task", t.ID).Msg("task lease expired")
					m.taskEnded(ctx, t.ID)
				}
			}
			last = now
		}
	}
}
