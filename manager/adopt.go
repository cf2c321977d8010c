package manager

import (
	"context"
	"fmt"

	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/state"
)

// adopt takes over a browser a previous manager left running, with its mux ownership restored from state,
// so every task's tabs survive a manager restart. Identity is checked by the backend: for Chromium the pid
// must be alive with the recorded start time, its command line must name our profile dir, and CDP must
// answer.
func (m *Manager) adopt(ctx context.Context, s state.BrowserSession) error {
	t, err := m.targetForKey(ctx, s.Key)
	if err != nil {
		return err
	}
	var run runner
	switch t.backend {
	case state.BackendChrome:
		if s.PID <= 0 || s.PIDStartTime.IsZero() {
			return fmt.Errorf("%w: no process identity recorded", errNotAdoptable)
		}
		run, err = chrome.Adopt(ctx, s.PID, s.PIDStartTime.UnixMilli(), m.cfg.path("profiles", t.slug), m.root.With().Str("component", "chrome").Str("browser", t.key).Logger())
	case state.BackendCDP:
		run, err = connectCDP(ctx, t.opts.CDPURL)
	case state.BackendZiniao:
		run, err = m.adoptZiniao(ctx, t, s.CDPEndpoint)
	default:
		return fmt.Errorf("%w: backend %s", errNotAdoptable, t.backend)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", errNotAdoptable, err)
	}
	ownership, err := m.db.LoadOwnership(ctx, s.Key)
	if err != nil {
		return err
	}
	l, err := m.attachMux(ctx, t, run, ownership)
	if err != nil {
		return err
	}
	m.install(m.browserSlot(s.Key), l)
	m.log.Info().Str("browser", s.Key).Int("pid", run.PID()).Int("clients", len(ownership)).Msg("adopted a running browser")
	return nil
}

// targetForKey describes the browser of a registry key: a store id or api.WebKey.
func (m *Manager) targetForKey(ctx context.Context, key string) (target, error) {
	if key == api.WebKey {
		return m.webTarget(ctx)
	}
	s, err := m.db.GetStore(ctx, key)
	if err != nil {
		return target{}, err
	}
	return m.storeTarget(s)
}
