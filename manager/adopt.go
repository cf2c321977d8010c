package manager

import (
	"context"
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// errNotAdoptable means a recorded browser cannot be taken over (it is gone, or not the one we launched).
var errNotAdoptable = errors.New("not adoptable")

// adopt takes over a browser a previous manager left running, with its mux ownership restored from state,
// so every task's tabs survive a manager restart. Identity is checked by the backend (for Chromium: the
// pid alive with the recorded start time, its command line naming our profile dir, CDP answering).
func (m *Manager) adopt(ctx context.Context, rec state.BrowserSession) error {
	sp, err := m.specForKey(ctx, rec.Key)
	if err != nil {
		return err
	}
	be, err := m.backendFor(sp)
	if err != nil {
		return fmt.Errorf("%w: %v", errNotAdoptable, err)
	}
	h, err := be.adopt(ctx, sp, rec)
	if err != nil {
		if errors.Is(err, errNotAdoptable) {
			return err
		}
		return fmt.Errorf("%w: %v", errNotAdoptable, err)
	}
	ownership, err := m.db.LoadOwnership(ctx, rec.Key)
	if err == nil {
		err = m.attachAdopted(ctx, sp, h, ownership)
	}
	if err != nil {
		h.Release() // stop watching it; the caller marks it stopped
		return err
	}
	m.note(zerolog.InfoLevel, api.EventBrowserAdopted, rec.Key, api.Event{Message: fmt.Sprintf(
		"%s adopted from the previous manager (pid %d, %d clients' tabs restored)", sp.name, h.PID(), len(ownership))})
	return nil
}

// attachAdopted puts an adopted browser behind its endpoint, under its store's lock.
func (m *Manager) attachAdopted(ctx context.Context, sp spec, h handle, ownership map[string][]string) error {
	s := m.slot(sp.key)
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	in, err := m.attachMux(ctx, s, sp, h, ownership)
	if err != nil {
		return err
	}
	m.install(s, in)
	return nil
}
