// Package handoffs is an agent asking a person for help and waiting: each handoff's record, answer, wait and
// expiry, and their metrics.
package handoffs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/tasks"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// Handoffs: an agent asks a person for help (the shim's --ask-human) and waits; a person answers in the
// web UI or with `vibe-browser handoff done`. State owns each handoff's status (one-way transitions out
// of pending); this file turns requests into those transitions, wakes the waiting shims and expires
// handoffs whose wait ran out.

// handoffSweepMax is the longest the expiry loop sleeps with nothing due: a bound, not a schedule (it wakes
// at the next deadline and whenever a handoff is made).
const handoffSweepMax = time.Minute

// Config is what the desk needs of the daemon around it.
type Config struct {
	DB       *state.DB
	Log      zerolog.Logger
	Ctx      context.Context // the daemon's life: a wait ends with it
	Note     func(level zerolog.Level, kind, key string, ev api.Event)
	Renew    func(ctx context.Context, taskID, storeID string) error // the lease of a task waiting for a person
	UILink   func(path string) string                                // the web UI's address of a path, or ""
	Quitting func() bool                                             // the manager is quitting: no new handoff
	// Store is the store a shim's baked config names (an error saying the wrapper is stale when it is gone).
	Store func(ctx context.Context, id string) (state.Store, error)
	// Count counts a task's handoff against VIBE_TASK_EVENTS_PER_MIN, or refuses it.
	Count    func(task, key, what string) error
	QuotaHit func() // a handoff refused at VIBE_HANDOFF_MAX
	WaitMax  time.Duration
	Max      int // VIBE_HANDOFF_MAX
}

// Desk makes, answers, waits on, expires and lists the handoffs.
type Desk struct {
	cfg Config
	db  *state.DB
	log zerolog.Logger
	hub handoffHub

	// mu makes each change of the handoffs one step with the note that says so: a task's count of its
	// pending handoffs with the new one's record (two asked at once never both pass VIBE_HANDOFF_MAX), and a
	// handoff's record with its note, so that its request is noted (the events, the task's timeline) before a
	// person's answer to it can be.
	mu sync.Mutex
}

// New is the handoffs' desk on cfg.
func New(cfg Config) *Desk { return &Desk{cfg: cfg, db: cfg.DB, log: cfg.Log} }

// Create is the shim's --ask-human: the request checked like an ensure, the task's lease renewed,
// the handoff recorded with its deadline (the wait asked for, bounded by VIBE_HANDOFF_WAIT_MAX_S) and
// announced (note: the overview, the log and VIBE_NOTIFY_URL).
func (d *Desk) Create(ctx context.Context, req api.HandoffRequest) (api.Handoff, error) {
	if d.cfg.Quitting() {
		return api.Handoff{}, errdefs.ErrShuttingDown
	}
	if err := tasks.CheckCaller(req.ClientID, req.BUName, req.TaskID); err != nil {
		return api.Handoff{}, err
	}
	switch {
	case strings.TrimSpace(req.Reason) == "":
		return api.Handoff{}, fmt.Errorf("%w: the reason is empty: say what the person should do, e.g. --ask-human \"solve the captcha on the login page\"", errdefs.ErrInvalid)
	case req.WaitS < 0:
		return api.Handoff{}, fmt.Errorf("%w: wait_s %d is negative: want seconds to wait, or 0 for the default %d", errdefs.ErrInvalid, req.WaitS, api.DefaultHandoffWaitS)
	}
	if err := api.CheckHandoffText("reason", req.Reason, api.MaxHandoffReason); err != nil {
		return api.Handoff{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	storeID, key := "", api.WebKey
	var stores []state.Store // the handoff's store, for its view
	switch req.Kind {
	case api.KindStore:
		s, err := d.cfg.Store(ctx, req.StoreID)
		if err != nil {
			return api.Handoff{}, err
		}
		storeID, key, stores = s.ID, s.ID, []state.Store{s}
	case api.KindWeb:
	default:
		return api.Handoff{}, fmt.Errorf("%w: kind %q: want store or web", errdefs.ErrInvalid, req.Kind)
	}
	if req.TaskID != "" {
		if err := d.cfg.Renew(ctx, req.TaskID, storeID); err != nil {
			return api.Handoff{}, err
		}
	}
	wait := time.Duration(req.WaitS) * time.Second
	if wait == 0 {
		wait = api.DefaultHandoffWaitS * time.Second
	}
	wait = min(wait, d.cfg.WaitMax)
	d.mu.Lock()
	h, err := d.record(ctx, key, state.Handoff{StoreID: storeID, TaskID: req.TaskID, ClientID: req.ClientID,
		BUName: req.BUName, Reason: req.Reason, Deadline: time.Now().Add(wait)})
	if err == nil {
		d.cfg.Note(zerolog.WarnLevel, api.EventHandoffRequested, key, api.Event{TaskID: h.TaskID, BUName: h.BUName,
			Message: h.Reason, Handoff: h.ID, From: api.FromAgent})
	}
	d.mu.Unlock()
	if err != nil {
		return api.Handoff{}, err
	}
	d.hub.wake()
	return d.Views(stores, []state.Handoff{h})[0], nil
}

// record records a new pending handoff of browser key unless its task already has VIBE_HANDOFF_MAX of
// them, or asked VIBE_TASK_EVENTS_PER_MIN this minute: one task's requests never bury another store's. The
// caller holds d.mu.
func (d *Desk) record(ctx context.Context, key string, h state.Handoff) (state.Handoff, error) {
	if h.TaskID != "" {
		n, err := d.db.PendingHandoffs(ctx, h.TaskID)
		if err != nil {
			return state.Handoff{}, err
		}
		if n >= d.cfg.Max {
			d.cfg.QuotaHit()
			return state.Handoff{}, fmt.Errorf("%w: task %s already waits on %d handoffs, its quota (VIBE_HANDOFF_MAX=%d): "+
				"wait for a person to answer one, or cancel one, before asking again", errdefs.ErrQuota, h.TaskID, n, d.cfg.Max)
		}
	}
	if err := d.cfg.Count(h.TaskID, key, "handoff"); err != nil {
		return state.Handoff{}, err
	}
	return d.db.CreateHandoff(ctx, h)
}

// Answer records a person's answer (done or can't help, with an optional note) and wakes the agent.
func (d *Desk) Answer(ctx context.Context, id string, a api.HandoffAnswer) (api.Handoff, error) {
	var to state.HandoffStatus
	switch a.Status {
	case api.HandoffDone:
		to = state.HandoffDone
	case api.HandoffCantHelp:
		to = state.HandoffCantHelp
	default:
		return api.Handoff{}, fmt.Errorf("%w: answer status %q: want %s or %s", errdefs.ErrInvalid, a.Status, api.HandoffDone, api.HandoffCantHelp)
	}
	if err := api.CheckHandoffText("note", a.Note, api.MaxHandoffNote); err != nil {
		return api.Handoff{}, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
	}
	h, err := d.finish(ctx, id, to, strings.TrimSpace(a.Note), func(h state.Handoff) {
		msg, from := "a person marked it done", api.FromManager
		if to == state.HandoffCantHelp {
			msg = "a person cannot help"
		}
		if h.Note != "" {
			msg, from = msg+": "+h.Note, api.FromPerson
		}
		d.cfg.Note(zerolog.InfoLevel, api.EventHandoffAnswered, handoffKey(h), api.Event{TaskID: h.TaskID, BUName: h.BUName,
			Message: msg, Handoff: h.ID, From: from})
	})
	if err != nil {
		return api.Handoff{}, err
	}
	return d.View(ctx, h)
}

// Cancel withdraws a pending handoff: its agent stopped waiting (a signal to the shim).
func (d *Desk) Cancel(ctx context.Context, id string) (api.Handoff, error) {
	h, err := d.finish(ctx, id, state.HandoffCancelled, "", func(h state.Handoff) {
		d.cfg.Note(zerolog.InfoLevel, api.EventHandoffCancelled, handoffKey(h), api.Event{TaskID: h.TaskID, BUName: h.BUName,
			Message: "the agent stopped waiting; it had asked: " + h.Reason, Handoff: h.ID, From: api.FromAgent})
	})
	if err != nil {
		return api.Handoff{}, err
	}
	return d.View(ctx, h)
}

// finish moves a pending handoff on, has noted say so, then wakes its waiters; a handoff that already moved
// on is a conflict saying what became of it.
func (d *Desk) finish(ctx context.Context, id string, to state.HandoffStatus, note string, noted func(state.Handoff)) (state.Handoff, error) {
	d.mu.Lock()
	h, err := d.db.FinishHandoff(ctx, id, to, note, time.Now())
	if err == nil {
		noted(h)
	}
	d.mu.Unlock()
	if errors.Is(err, errdefs.ErrConflict) {
		return state.Handoff{}, fmt.Errorf("handoff %s is no longer pending: %s: %w", id, handoffOutcome(h), errdefs.ErrConflict)
	}
	if err != nil {
		return state.Handoff{}, err
	}
	d.hub.changed(id)
	return h, nil
}

// handoffOutcome says in words what became of a handoff that is no longer pending.
func handoffOutcome(h state.Handoff) string {
	switch h.Status {
	case state.HandoffDone:
		return "a person already marked it done"
	case state.HandoffCantHelp:
		return "a person already answered that they cannot help"
	case state.HandoffTimedOut:
		return "nobody answered within the agent's wait, and the agent has moved on"
	case state.HandoffCancelled:
		return "the agent stopped waiting for it"
	}
	return string(h.Status)
}

// Wait answers once handoff id is no longer pending, or after api.HandoffPoll with it still pending
// (the shim asks again). Each wait renews the task's lease: an agent waiting for a person is still at work.
func (d *Desk) Wait(ctx context.Context, id string) (api.Handoff, error) {
	pollEnd := time.Now().Add(api.HandoffPoll)
	renewed := false
	for {
		changed := d.hub.watch(id)
		h, err := d.db.GetHandoff(ctx, id)
		if err != nil {
			return api.Handoff{}, err
		}
		now := time.Now()
		if h.Status == state.HandoffPending && !now.Before(h.Deadline) {
			// It is due: this wait says so at once rather than at the loop's turn.
			if err := d.expire(ctx); err != nil {
				return api.Handoff{}, err
			}
			continue
		}
		if h.Status != state.HandoffPending || !now.Before(pollEnd) {
			return d.View(ctx, h)
		}
		if h.TaskID != "" && !renewed {
			renewed = true
			if err := d.cfg.Renew(ctx, h.TaskID, h.StoreID); err != nil {
				d.log.Warn().Err(err).Str("handoff", h.ID).Msg("renew the lease of a task waiting for a person")
			}
		}
		timer := time.NewTimer(min(h.Deadline.Sub(now), pollEnd.Sub(now)))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done(): // the shim left (or was stopped): nobody reads this answer, so it is not an error
			timer.Stop()
			return d.View(context.WithoutCancel(ctx), h)
		case <-d.cfg.Ctx.Done():
			timer.Stop()
			return api.Handoff{}, errdefs.ErrShuttingDown
		}
		timer.Stop()
	}
}

// expire times out every pending handoff whose wait ran out, and says so.
func (d *Desk) expire(ctx context.Context) error {
	d.mu.Lock()
	expired, err := d.db.ExpireHandoffs(ctx, time.Now())
	for _, h := range expired {
		d.cfg.Note(zerolog.WarnLevel, api.EventHandoffTimedOut, handoffKey(h), api.Event{TaskID: h.TaskID, BUName: h.BUName,
			Message: "nobody answered in time; the agent had asked: " + h.Reason, Handoff: h.ID, From: api.FromAgent})
	}
	d.mu.Unlock()
	for _, h := range expired {
		d.hub.changed(h.ID)
	}
	return err
}

// Loop expires handoffs at their deadlines, also those whose shim is gone (killed, or its machine
// asleep) and those that ran out while the manager was down.
func (d *Desk) Loop(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.hub.kicks():
		case <-timer.C:
		}
		if err := d.expire(ctx); err != nil && ctx.Err() == nil {
			d.log.Error().Err(err).Msg("expire handoffs")
		}
		wait := handoffSweepMax
		next, err := d.db.NextHandoffDeadline(ctx)
		if err != nil {
			d.log.Error().Err(err).Msg("find the next handoff deadline")
		} else if !next.IsZero() {
			wait = min(wait, max(time.Until(next), 10*time.Millisecond))
		}
		timer.Stop()
		timer.Reset(wait)
	}
}

// handoffKey is the browser key a handoff's events are noted under.
func handoffKey(h state.Handoff) string {
	if h.StoreID == "" {
		return api.WebKey
	}
	return h.StoreID
}

// List returns the handoffs in status ("" for every one), oldest first.
func (d *Desk) List(ctx context.Context, status string) ([]api.Handoff, error) {
	if status != "" && !slices.Contains(state.HandoffStatuses, state.HandoffStatus(status)) {
		return nil, fmt.Errorf("%w: status %q: want one of %s, or none for all", errdefs.ErrInvalid, status,
			strings.Trim(fmt.Sprint(state.HandoffStatuses), "[]"))
	}
	hs, err := d.db.ListHandoffs(ctx, state.HandoffStatus(status))
	if err != nil {
		return nil, err
	}
	stores, err := d.db.ListStores(ctx)
	if err != nil {
		return nil, err
	}
	return d.Views(stores, hs), nil
}

// Get is handoff id as the API prints it.
func (d *Desk) Get(ctx context.Context, id string) (api.Handoff, error) {
	h, err := d.db.GetHandoff(ctx, id)
	if err != nil {
		return api.Handoff{}, err
	}
	return d.View(ctx, h)
}

// View is h as the API prints it.
func (d *Desk) View(ctx context.Context, h state.Handoff) (api.Handoff, error) {
	var stores []state.Store
	if h.StoreID != "" {
		s, err := d.db.GetStore(ctx, h.StoreID)
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return api.Handoff{}, err
		}
		stores = append(stores, s)
	}
	return d.Views(stores, []state.Handoff{h})[0], nil
}

// Views are handoffs as the API prints them, their stores named by slug from stores.
func (d *Desk) Views(stores []state.Store, hs []state.Handoff) []api.Handoff {
	slugs := SlugsOf(stores)
	out := make([]api.Handoff, 0, len(hs))
	for _, h := range hs {
		v := api.Handoff{ID: h.ID, Status: string(h.Status), Store: slugs.Of(h.StoreID), StoreID: h.StoreID, TaskID: h.TaskID,
			ClientID: h.ClientID, BUName: h.BUName, Reason: h.Reason, Note: h.Note, CreatedAt: h.CreatedAt,
			Deadline: h.Deadline, AnsweredAt: h.AnsweredAt, WaitS: int(h.Deadline.Sub(h.CreatedAt).Round(time.Second) / time.Second)}
		v.URL = d.cfg.UILink("/#handoff-" + h.ID)
		out = append(out, v)
	}
	return out
}
