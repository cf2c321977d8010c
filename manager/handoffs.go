package manager

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
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

// handoffHub wakes the shims waiting on a handoff when it changes, and the expiry loop when one is made.
// Its zero value is ready.
type handoffHub struct {
	mu      sync.Mutex               // mu guards the fields below
	waiters map[string]chan struct{} // handoff id -> closed at its next change
	kick    chan struct{}            // one pending wake-up of the expiry loop is enough: capacity 1
}

// watch returns a channel closed at the next change of handoff id. Take it before reading the handoff,
// so a change in between is never missed.
func (h *handoffHub) watch(id string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters == nil {
		h.waiters = map[string]chan struct{}{}
	}
	ch, ok := h.waiters[id]
	if !ok {
		ch = make(chan struct{})
		h.waiters[id] = ch
	}
	return ch
}

// changed wakes everyone watching handoff id.
func (h *handoffHub) changed(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.waiters[id]; ok {
		close(ch)
		delete(h.waiters, id)
	}
}

func (h *handoffHub) kicks() chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kick == nil {
		h.kick = make(chan struct{}, 1)
	}
	return h.kick
}

// wake tells the expiry loop that a deadline may have moved closer.
func (h *handoffHub) wake() {
	select {
	case h.kicks() <- struct{}{}:
	default: // one is already pending
	}
}

// handoffDesk answers, waits on, expires and lists the handoffs; the manager's createHandoff makes them.
type handoffDesk struct {
	db     *state.DB
	log    zerolog.Logger
	ctx    context.Context // the daemon's life: a wait ends with it
	note   func(level zerolog.Level, kind, key string, ev api.Event)
	renew  func(ctx context.Context, taskID, storeID string) error // the lease of a task waiting for a person
	uiLink func(path string) string
	hub    handoffHub

	// createMu makes a task's count of its pending handoffs and the new one's record one step, so that two
	// asked at once never both pass VIBE_HANDOFF_MAX.
	createMu sync.Mutex
}

// createHandoff is the shim's --ask-human: the request checked like an ensure, the task's lease renewed,
// the handoff recorded with its deadline (the wait asked for, bounded by VIBE_HANDOFF_WAIT_MAX_S) and
// announced (note: the overview, the log and VIBE_NOTIFY_URL).
func (m *Manager) createHandoff(ctx context.Context, req api.HandoffRequest) (api.Handoff, error) {
	if m.fleet.Quitting() {
		return api.Handoff{}, apierr.ErrShuttingDown
	}
	if err := checkShimCaller(req.ClientID, req.BUName, req.TaskID); err != nil {
		return api.Handoff{}, err
	}
	switch {
	case strings.TrimSpace(req.Reason) == "":
		return api.Handoff{}, fmt.Errorf("%w: the reason is empty: say what the person should do, e.g. --ask-human \"solve the captcha on the login page\"", apierr.ErrBadRequest)
	case req.WaitS < 0:
		return api.Handoff{}, fmt.Errorf("%w: wait_s %d is negative: want seconds to wait, or 0 for the default %d", apierr.ErrBadRequest, req.WaitS, api.DefaultHandoffWaitS)
	}
	if err := api.CheckHandoffText("reason", req.Reason, api.MaxHandoffReason); err != nil {
		return api.Handoff{}, fmt.Errorf("%w: %w", apierr.ErrBadRequest, err)
	}
	storeID, key := "", api.WebKey
	var stores []state.Store // the handoff's store, for its view
	switch req.Kind {
	case api.KindStore:
		s, err := m.shimStore(ctx, req.StoreID)
		if err != nil {
			return api.Handoff{}, err
		}
		storeID, key, stores = s.ID, s.ID, []state.Store{s}
	case api.KindWeb:
	default:
		return api.Handoff{}, fmt.Errorf("%w: kind %q: want store or web", apierr.ErrBadRequest, req.Kind)
	}
	if req.TaskID != "" {
		if err := m.touchTask(ctx, req.TaskID, storeID); err != nil {
			return api.Handoff{}, err
		}
	}
	wait := time.Duration(req.WaitS) * time.Second
	if wait == 0 {
		wait = api.DefaultHandoffWaitS * time.Second
	}
	wait = min(wait, m.cfg.HandoffWaitMax)
	h, err := m.recordHandoff(ctx, key, state.Handoff{StoreID: storeID, TaskID: req.TaskID, ClientID: req.ClientID,
		BUName: req.BUName, Reason: req.Reason, Deadline: time.Now().Add(wait)})
	if err != nil {
		return api.Handoff{}, err
	}
	m.handoffs.hub.wake()
	m.note(zerolog.WarnLevel, api.EventHandoffRequested, key, api.Event{TaskID: h.TaskID, BUName: h.BUName,
		Message: h.Reason, Handoff: h.ID, From: api.FromAgent})
	return m.handoffs.views(stores, []state.Handoff{h})[0], nil
}

// recordHandoff records a new pending handoff of browser key unless its task already has VIBE_HANDOFF_MAX of
// them, or asked VIBE_TASK_EVENTS_PER_MIN this minute: one task's requests never bury another store's.
func (m *Manager) recordHandoff(ctx context.Context, key string, h state.Handoff) (state.Handoff, error) {
	d := m.handoffs
	d.createMu.Lock()
	defer d.createMu.Unlock()
	if h.TaskID != "" {
		n, err := d.db.PendingHandoffs(ctx, h.TaskID)
		if err != nil {
			return state.Handoff{}, err
		}
		if n >= m.cfg.HandoffMax {
			m.metrics.quotaHit(quotaHandoffs)
			return state.Handoff{}, fmt.Errorf("%w: task %s already waits on %d handoffs, its quota (VIBE_HANDOFF_MAX=%d): "+
				"wait for a person to answer one, or cancel one, before asking again", apierr.ErrQuota, h.TaskID, n, m.cfg.HandoffMax)
		}
	}
	if err := m.countTask(h.TaskID, key, "handoff"); err != nil {
		return state.Handoff{}, err
	}
	return d.db.CreateHandoff(ctx, h)
}

// answer records a person's answer (done or can't help, with an optional note) and wakes the agent.
func (d *handoffDesk) answer(ctx context.Context, id string, a api.HandoffAnswer) (api.Handoff, error) {
	var to state.HandoffStatus
	switch a.Status {
	case api.HandoffDone:
		to = state.HandoffDone
	case api.HandoffCantHelp:
		to = state.HandoffCantHelp
	default:
		return api.Handoff{}, fmt.Errorf("%w: answer status %q: want %s or %s", apierr.ErrBadRequest, a.Status, api.HandoffDone, api.HandoffCantHelp)
	}
	if err := api.CheckHandoffText("note", a.Note, api.MaxHandoffNote); err != nil {
		return api.Handoff{}, fmt.Errorf("%w: %w", apierr.ErrBadRequest, err)
	}
	h, err := d.finish(ctx, id, to, strings.TrimSpace(a.Note))
	if err != nil {
		return api.Handoff{}, err
	}
	msg, from := "a person marked it done", api.FromManager
	if to == state.HandoffCantHelp {
		msg = "a person cannot help"
	}
	if h.Note != "" {
		msg, from = msg+": "+h.Note, api.FromPerson
	}
	d.note(zerolog.InfoLevel, api.EventHandoffAnswered, handoffKey(h), api.Event{TaskID: h.TaskID, BUName: h.BUName,
		Message: msg, Handoff: h.ID, From: from})
	return d.view(ctx, h)
}

// cancel withdraws a pending handoff: its agent stopped waiting (a signal to the shim).
func (d *handoffDesk) cancel(ctx context.Context, id string) (api.Handoff, error) {
	h, err := d.finish(ctx, id, state.HandoffCancelled, "")
	if err != nil {
		return api.Handoff{}, err
	}
	d.note(zerolog.InfoLevel, api.EventHandoffCancelled, handoffKey(h), api.Event{TaskID: h.TaskID, BUName: h.BUName,
		Message: "the agent stopped waiting; it had asked: " + h.Reason, Handoff: h.ID, From: api.FromAgent})
	return d.view(ctx, h)
}

// finish moves a pending handoff on and wakes its waiters; a handoff that already moved on is a
// conflict saying what became of it.
func (d *handoffDesk) finish(ctx context.Context, id string, to state.HandoffStatus, note string) (state.Handoff, error) {
	h, err := d.db.FinishHandoff(ctx, id, to, note, time.Now())
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

// wait answers once handoff id is no longer pending, or after api.HandoffPoll with it still pending
// (the shim asks again). Each wait renews the task's lease: an agent waiting for a person is still at work.
func (d *handoffDesk) wait(ctx context.Context, id string) (api.Handoff, error) {
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
			return d.view(ctx, h)
		}
		if h.TaskID != "" && !renewed {
			renewed = true
			if err := d.renew(ctx, h.TaskID, h.StoreID); err != nil {
				d.log.Warn().Err(err).Str("handoff", h.ID).Msg("renew the lease of a task waiting for a person")
			}
		}
		timer := time.NewTimer(min(h.Deadline.Sub(now), pollEnd.Sub(now)))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done(): // the shim left (or was stopped): nobody reads this answer, so it is not an error
			timer.Stop()
			return d.view(context.WithoutCancel(ctx), h)
		case <-d.ctx.Done():
			timer.Stop()
			return api.Handoff{}, apierr.ErrShuttingDown
		}
		timer.Stop()
	}
}

// expire times out every pending handoff whose wait ran out, and says so.
func (d *handoffDesk) expire(ctx context.Context) error {
	expired, err := d.db.ExpireHandoffs(ctx, time.Now())
	if err != nil {
		return err
	}
	for _, h := range expired {
		d.hub.changed(h.ID)
		d.note(zerolog.WarnLevel, api.EventHandoffTimedOut, handoffKey(h), api.Event{TaskID: h.TaskID, BUName: h.BUName,
			Message: "nobody answered in time; the agent had asked: " + h.Reason, Handoff: h.ID, From: api.FromAgent})
	}
	return nil
}

// loop expires handoffs at their deadlines, also those whose shim is gone (killed, or its machine
// asleep) and those that ran out while the manager was down.
func (d *handoffDesk) loop(ctx context.Context) {
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

// list returns the handoffs in status ("" for every one), oldest first.
func (d *handoffDesk) list(ctx context.Context, status string) ([]api.Handoff, error) {
	if status != "" && !slices.Contains(state.HandoffStatuses, state.HandoffStatus(status)) {
		return nil, fmt.Errorf("%w: status %q: want one of %s, or none for all", apierr.ErrBadRequest, status,
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
	return d.views(stores, hs), nil
}

func (d *handoffDesk) view(ctx context.Context, h state.Handoff) (api.Handoff, error) {
	var stores []state.Store
	if h.StoreID != "" {
		s, err := d.db.GetStore(ctx, h.StoreID)
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return api.Handoff{}, err
		}
		stores = append(stores, s)
	}
	return d.views(stores, []state.Handoff{h})[0], nil
}

// views are handoffs as the API prints them, their stores named by slug from stores.
func (d *handoffDesk) views(stores []state.Store, hs []state.Handoff) []api.Handoff {
	slugs := slugsOf(stores)
	out := make([]api.Handoff, 0, len(hs))
	for _, h := range hs {
		v := api.Handoff{ID: h.ID, Status: string(h.Status), Store: slugs.of(h.StoreID), StoreID: h.StoreID, TaskID: h.TaskID,
			ClientID: h.ClientID, BUName: h.BUName, Reason: h.Reason, Note: h.Note, CreatedAt: h.CreatedAt,
			Deadline: h.Deadline, AnsweredAt: h.AnsweredAt, WaitS: int(h.Deadline.Sub(h.CreatedAt).Round(time.Second) / time.Second)}
		v.URL = d.uiLink("/#handoff-" + h.ID)
		out = append(out, v)
	}
	return out
}

// uiLink is the web UI's address of path, or "" with the UI off.
func (m *Manager) uiLink(path string) string {
	if m.ui == nil {
		return ""
	}
	return m.ui.URL() + path
}

// handoffMetrics counts the handoffs in state by status (vibe_handoffs), read at each scrape: the counts
// survive restarts, as the handoffs do.
type handoffMetrics struct {
	db   *state.DB
	desc *prometheus.Desc
}

func newHandoffMetrics(db *state.DB) handoffMetrics {
	return handoffMetrics{db: db, desc: prometheus.NewDesc("vibe_handoffs",
		"Handoffs (agents' requests for a person's help) in state, by status: pending, done, cant_help, timed_out, cancelled.",
		[]string{"status"}, nil)}
}

func (c handoffMetrics) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c handoffMetrics) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.db.CountHandoffs(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, s := range state.HandoffStatuses {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[s]), string(s))
	}
}
