package browsers

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// healthyUptime is how long a browser must have run before its death no longer counts against the relaunch
// budget: "a healthy launch clears it" (SPEC §4.5), where healthy means it stayed up, not merely started.
const healthyUptime = time.Minute

// relaunchBudget is the one owner of a store's relaunch budget (SPEC §4.5): whether the next start is a
// relaunch (the last start failed, or the browser died under us), and the relaunches recorded in state
// within the window. Its slot's lock guards it.
type relaunchBudget struct {
	key    string
	db     *state.DB
	max    int // VIBE_BROWSER_RELAUNCH_MAX; 0 disables the budget
	window time.Duration
	note   func(level zerolog.Level, kind, key string, ev api.Event) // the fleet's events

	startFailed bool          // the last start failed: the next one is a relaunch
	died        bool          // the browser died under us (not stopped): the next start is a relaunch
	diedUptime  time.Duration // how long it had run when it died
	refusing    bool          // the last spend was refused: later refusals are no news
}

func (f *Fleet) newBudget(key string) relaunchBudget {
	return relaunchBudget{key: key, db: f.db, max: f.cfg.RelaunchMax, window: f.cfg.RelaunchWindow, note: f.note}
}

// startDone records whether a start (or a relaunch) gave a browser that was put to use.
func (b *relaunchBudget) startDone(ok bool) { b.startFailed = !ok }

// death records that the browser died, or was replaced as hung, after running for uptime.
func (b *relaunchBudget) death(uptime time.Duration) { b.died, b.diedUptime = true, uptime }

// spend charges a start that follows a death or a failed start, and refuses it with errdefs.ErrBudget when the
// budget is spent. A first start, or one after a stop, is free. A death after a healthy run clears the
// window first. sp names the store in the refusal. The moment the budget becomes spent is an event: once, not
// on every refused call after it.
func (b *relaunchBudget) spend(ctx context.Context, sp Spec) error {
	relaunch := b.startFailed || b.died
	if b.died && b.diedUptime >= healthyUptime {
		if err := b.db.Browsers().ClearRelaunches(ctx, b.key); err != nil {
			return err
		}
	}
	b.died = false
	if !relaunch || b.max <= 0 {
		return nil
	}
	now := time.Now()
	n, err := b.db.Browsers().CountRelaunches(ctx, b.key, now.Add(-b.window))
	if err != nil {
		return err
	}
	if n >= b.max {
		err := fmt.Errorf("%w: %s died or failed to start %d times in the last %v (VIBE_BROWSER_RELAUNCH_MAX=%d per "+
			"VIBE_BROWSER_RELAUNCH_WINDOW_S=%d); look at the manager's log, then force a start with "+
			"`vibe-browser browser start %s` or wait for the window to pass", errdefs.ErrBudget, sp.Name, n, b.window,
			b.max, int(b.window.Seconds()), sp.Slug)
		if !b.refusing {
			b.note(zerolog.ErrorLevel, api.EventBudgetSpent, sp.Key, api.Event{Message: err.Error()})
		}
		b.refusing = true
		return err
	}
	b.refusing = false
	return b.db.Browsers().RecordRelaunch(ctx, b.key, now)
}

// forgive is a person's explicit start: the recorded relaunches are cleared and a failed last start no
// longer counts.
func (b *relaunchBudget) forgive(ctx context.Context) error {
	b.startFailed, b.refusing = false, false
	return b.db.Browsers().ClearRelaunches(ctx, b.key)
}

// reset is an explicit stop: nothing before it counts any more.
func (b *relaunchBudget) reset(ctx context.Context) error {
	b.died = false
	return b.forgive(ctx)
}
