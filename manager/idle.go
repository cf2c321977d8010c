package manager

import (
	"context"
	"time"

	"vibebrowser/manager/api"
)

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

// sweepIdle stops every running browser that no task holds, no client is connected to and nothing has
// touched for the idle time. Each decision is taken under the store's lock, the lock ensure takes, so a task
// starting in between is never cut off. The wrapper stays: the next call restarts the browser.
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
	for _, b := range m.slots() {
		if held[b.key] || b.current() == nil {
			continue
		}
		lockCtx, cancel := context.WithTimeout(ctx, time.Second)
		err := b.acquire(lockCtx) // a start or stop in progress: decide next round
		cancel()
		if err != nil {
			continue
		}
		if l := b.current(); l != nil {
			if reason := m.idleFor(l); reason == "" {
				m.log.Info().Str("browser", b.key).Dur("idle", m.cfg.Idle).Msg("stopping an idle browser")
				m.teardownLocked(b, l)
			}
		}
		b.release()
	}
}

// idleFor says why l is not idle ("" when it is).
func (m *Manager) idleFor(l *live) string {
	st := l.mux.Stats()
	switch {
	case st.Clients > 0:
		return "connected clients"
	case time.Duration(st.IdleSeconds*float64(time.Second)) < m.cfg.Idle:
		return "recent activity"
	case time.Since(time.Unix(0, l.lastEnsure.Load())) < m.cfg.Idle:
		return "recent ensure"
	}
	return ""
}
