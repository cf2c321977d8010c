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
