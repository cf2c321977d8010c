package browsers

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/keeper"
	"vibebrowser/state"
)

// errNotAdoptable means a recorded browser cannot be taken over (it is gone, or not the one we launched).
var errNotAdoptable = errors.New("not adoptable")

// Boot brings the fleet in line with reality before the daemon answers: browsers recorded as running are
// adopted when they are still ours and alive, else recorded stopped; the unfinished downloads that no
// browser still writes are removed; every store's endpoint (and the web browser's) is bound.
func (f *Fleet) Boot(ctx context.Context) error {
	sessions, err := f.db.Browsers().ListSessions(ctx)
	if err != nil {
		return err
	}
	f.sweep.partials() // before any adopted browser's mux starts copying
	for _, s := range sessions {
		if s.Status != state.BrowserRunning {
			continue
		}
		if err := f.adopt(ctx, s); err != nil {
			f.log.Info().Str("browser", s.Key).Err(err).Msg("not adopting the recorded browser; marked stopped")
			if err := f.db.Browsers().MarkStopped(ctx, s.Key, time.Now()); err != nil {
				return err
			}
		}
	}
	f.stopStrayKeepers(ctx)
	f.sweep.incoming(f.Running())
	return f.bindEndpoints(ctx)
}

// stopStrayKeepers stops the keepers left in run/ and run/keepers/*/ whose browsers were not adopted:
// nothing can reach those browsers any more, and each holds its store's profile. Their tabs come back at the
// next start, which restores the session Browser.close saved.
func (f *Fleet) stopStrayKeepers(ctx context.Context) {
	for _, dir := range f.cfg.KeeperDirs() {
		files, _ := filepath.Glob(keeper.IdentityPath(dir, "*"))
		for _, file := range files {
			key := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(file), "keep-"), ".json")
			if in := f.Current(key); in != nil && in.KeeperDir() == dir {
				continue
			}
			stopped, err := chrome.StopStray(ctx, dir, key, f.log.With().Str("browser", key).Logger())
			if err != nil {
				f.log.Warn().Str("browser", key).Str("dir", dir).Err(err).Msg("stray keeper")
			}
			if stopped {
				f.note(zerolog.WarnLevel, api.EventStrayClosed, key, api.Event{Message: "a browser left running " +
					"by an earlier manager could not be adopted and was closed; its tabs come back at its next start"})
			}
		}
	}
}

// adopt takes over a browser a previous manager left running, with its mux ownership restored from state,
// so every task's tabs survive a manager restart. Identity is checked by the backend (for Chromium: the
// pid alive with the recorded start time, its command line naming our profile dir, CDP answering).
func (f *Fleet) adopt(ctx context.Context, rec state.BrowserSession) error {
	sp, err := f.SpecFor(ctx, rec.Key)
	if err != nil {
		return err
	}
	if err := f.mayRun(ctx, sp); err != nil {
		return fmt.Errorf("%w: %v", errNotAdoptable, err) // the store runs elsewhere now: this one is stopped
	}
	be, err := f.backendFor(sp)
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
	ownership, err := f.db.Browsers().LoadOwnership(ctx, rec.Key)
	if err == nil {
		err = f.attachAdopted(ctx, sp, be, h, ownership)
	}
	if err != nil {
		h.Release() // stop watching it; the caller marks it stopped
		return err
	}
	f.note(zerolog.InfoLevel, api.EventBrowserAdopted, rec.Key, api.Event{Message: fmt.Sprintf(
		"%s adopted from the previous manager (pid %d, %d clients' tabs restored)", sp.Name, h.PID(), len(ownership))})
	return nil
}

// attachAdopted puts an adopted browser behind its endpoint, under its store's lock.
func (f *Fleet) attachAdopted(ctx context.Context, sp Spec, be backend, h handle, ownership map[string][]string) error {
	s := f.slot(sp.Key)
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	in, err := f.attachMux(ctx, s, sp, be, h, ownership)
	if err != nil {
		return err
	}
	f.install(s, in)
	return nil
}
