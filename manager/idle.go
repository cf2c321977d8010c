package manager

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

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

// sweepIdle stops every running browser that no task holds, no client is connected to, no person watches
// and nothing has touched for the idle time. Each decision is taken under the store's lock, the lock ensure
// takes, so a task starting in between is never cut off. The wrapper stays: the next call restarts the
// browser.
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
	for _, s := range m.slots() {
		if held[s.key] || s.current() == nil {
			continue
		}
		lockCtx, cancel := context.WithTimeout(ctx, time.Second)
		err := s.acquire(lockCtx) // a start or stop in progress: decide next round
		cancel()
		if err != nil {
			continue
		}
		if in := s.current(); in != nil {
			if reason := m.busyReason(in); reason == "" {
				m.note(zerolog.InfoLevel, api.EventIdleStop, s.key, api.Event{Message: fmt.Sprintf(
					"%s stopped: no task, no client and no activity for %s", in.spec.name, m.cfg.Idle)})
				m.teardownLocked(s, in)
			}
		}
		s.release()
	}
}

// busyReason says why in is not idle, or "" when it is.
func (m *Manager) busyReason(in *instance) string {
	st := in.mux.Stats()
	switch {
	case st.Clients > 0:
		return "connected clients"
	case st.Viewers > 0: // a person watching a tab, or logging a store in through a human tab
		return "a person is watching"
	case time.Duration(st.IdleSeconds*float64(time.Second)) < m.cfg.Idle:
		return "recent activity"
	case time.Since(time.Unix(0, in.lastEnsure.Load())) < m.cfg.Idle:
		return "recent ensure"
	}
	return ""
}
