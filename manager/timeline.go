package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/timeline"
	"vibebrowser/manager/ui"
	"vibebrowser/mux"
	"vibebrowser/mux/clientid"
	"vibebrowser/state"
)

// The task timeline (SPEC §15): the shims report each call's end, the muxes each tab's steps, the manager
// the downloads, handoffs and faults; package timeline records them, and the API, the CLI and the UI read
// them.

// timelineFollow bounds a follower's wait for the next entry (GET PathTaskTimeline?wait=1).
const timelineFollow = 25 * time.Second

// newTimeline is the daemon's recorder, on its configuration.
func (m *Manager) newTimeline() *timeline.Recorder {
	return timeline.New(timeline.Config{DB: m.db, Dir: m.cfg.Path("timeline"),
		MaxBytes: int64(m.cfg.TimelineMaxMB) << 20, Keep: time.Duration(m.cfg.TimelineKeepDays) * 24 * time.Hour,
		Full: func(string, string) { m.metrics.quotaHit(quotaTimeline) },
		Log:  m.root.With().Str("component", "timeline").Logger()})
}

// timelineMode is what sp's browser records, and where that comes from: the store's own setting, else
// VIBE_TIMELINE.
func (m *Manager) timelineMode(sp browsers.Spec) (mode, from string) {
	if sp.Opts.Timeline != "" {
		return sp.Opts.Timeline, "store"
	}
	return m.cfg.Timeline, "VIBE_TIMELINE"
}

// where is sp's browser as the recorder sees it.
func (m *Manager) where(sp browsers.Spec) timeline.Where {
	mode, _ := m.timelineMode(sp)
	return timeline.Where{Key: sp.Key, Slug: sp.Slug, Mode: mode}
}

// specOf is the browser of a task's store id ("" : the web browser).
func (m *Manager) specOf(ctx context.Context, storeID string) (browsers.Spec, error) {
	if storeID == "" {
		return m.fleet.WebSpec(ctx)
	}
	return m.fleet.SpecFor(ctx, storeID)
}

// recordStep appends a step of task on the browser key to its timeline (a no-op for no task), in the mode
// the store has now (a running mux's spec is the one it started with).
func (m *Manager) recordStep(key, task, client, kind string, data any) {
	if task == "" {
		return
	}
	ctx, cancel := context.WithTimeout(m.ctx, 10*time.Second)
	defer cancel()
	storeID := key
	if key == api.WebKey {
		storeID = ""
	}
	sp, err := m.specOf(ctx, storeID)
	if err != nil {
		m.log.Warn().Err(err).Str("task", task).Str("kind", kind).Msg("a timeline step of a browser that is gone")
		return
	}
	m.timeline.Record(ctx, m.where(sp), task, client, kind, data)
}

// tabStep is a mux's Timeline hook: a step of one of a task's tabs.
func (m *Manager) tabStep(sp browsers.Spec, ev mux.TimelineEvent) {
	task := clientid.OwnerDir(ev.Client)
	if !api.ValidTaskID(task) {
		return // aux, manual, discovery clients: no task's
	}
	var kind string
	var data any
	switch ev.Kind {
	case mux.TabCreated, mux.TabClosed:
		event := api.TabCreated
		if ev.Kind == mux.TabClosed {
			event = api.TabClosed
			m.timeline.TabClosed(ev.Tab)
		}
		kind, data = api.EntryTab, api.TabEntry{Tab: ev.Tab, Event: event, URL: ev.URL}
	case mux.TabNavigated:
		kind, data = api.EntryNav, api.NavEntry{Tab: ev.Tab, URL: ev.URL, Title: ev.Title}
	case mux.HoldTaken, mux.HoldReleased:
		event := api.TakeoverTook
		if ev.Kind == mux.HoldReleased {
			event = api.TakeoverGave
		}
		kind, data = api.EntryTakeover, api.TakeoverEntry{Tab: ev.Tab, Event: event, By: ev.By, Why: ev.Why}
	default:
		return
	}
	m.recordStep(sp.Key, task, ev.Client, kind, data)
}

// eventStep puts the events that hit a task into its timeline: its handoffs, and its browser's death or
// relaunch under it, or its login set back at a launch.
func (m *Manager) eventStep(kind, key string, ev api.Event) {
	switch kind {
	case api.EventHandoffRequested, api.EventHandoffAnswered, api.EventHandoffTimedOut, api.EventHandoffCancelled:
		h, err := m.db.GetHandoff(m.ctx, ev.Handoff)
		if err != nil {
			return
		}
		entry := api.HandoffEntry{ID: h.ID, Status: string(h.Status), Note: h.Note}
		if kind == api.EventHandoffRequested {
			entry.Question = h.Reason
		}
		m.recordStep(key, h.TaskID, h.ClientID, api.EntryHandoff, entry)
	case api.EventBrowserDied, api.EventBrowserRelaunched, api.EventLoginRestored:
		what := api.FaultCrash
		switch kind {
		case api.EventBrowserRelaunched:
			what = api.FaultRelaunch
		case api.EventLoginRestored:
			what = api.FaultLoginRestored
		}
		tasks, err := m.db.ListActiveTasks(m.ctx, time.Now())
		if err != nil {
			return
		}
		for _, t := range tasks {
			if t.StoreID == ev.StoreID && t.Active(time.Now()) {
				m.recordStep(key, t.ID, "", api.EntryFault, api.FaultEntry{What: what, Message: ev.Message})
			}
		}
	}
}

// handleTaskCall is POST PathTaskCalls on the owner's socket.
func (m *Manager) handleTaskCall(r *http.Request) (any, error) {
	var rep api.CallReport
	if err := decode(r, &rep); err != nil {
		return nil, err
	}
	t, err := m.db.GetTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return m.recordCall(r.Context(), t.ID, t.StoreID, rep)
}

// agentTaskCall is POST PathTaskCalls on the agents' socket: a task reports its own calls only.
func (m *Manager) agentTaskCall(r *http.Request, c agentCall) (any, error) {
	var rep api.CallReport
	if err := decode(r, &rep); err != nil {
		return nil, err
	}
	task, kind, storeID := r.PathValue("id"), c.kind, c.token.StoreID
	if err := c.own(&kind, &storeID, &task); err != nil {
		return nil, err
	}
	return m.recordCall(r.Context(), task, storeID, rep)
}

// recordCall checks a call report, cuts it to SPEC §15's bounds (it comes from the agent's side, whatever
// the shim keeps) and hands it to the recorder, with the call's running browser; a task whose timeline is
// full (VIBE_TIMELINE_MAX_MB) is refused, naming the quota.
func (m *Manager) recordCall(ctx context.Context, task, storeID string, rep api.CallReport) (any, error) {
	// A task's calls on its store's aux session (SPEC §20: its token opens it) are its calls too.
	if clientid.OwnerDir(rep.Client) != task && rep.Client != api.AuxClient {
		return nil, fmt.Errorf("%w: client %q is not task %s's: a task reports its own calls (client %s, %s-wN or %s)",
			apierr.ErrBadRequest, rep.Client, task, task, task, api.AuxClient)
	}
	if rep.Session != "" && !api.ValidBUName(rep.Session) {
		return nil, fmt.Errorf("%w: session %q must match [A-Za-z0-9_-]{1,64}", apierr.ErrBadRequest, rep.Session)
	}
	if rep.Cut() {
		m.metrics.quotaHit(quotaReportCut)
	}
	sp, err := m.specOf(ctx, storeID)
	if err != nil {
		return nil, err
	}
	var b timeline.Browser
	if in := m.fleet.Current(sp.Key); in != nil {
		b = in.Mux()
	}
	if err := m.timeline.Call(m.where(sp), task, rep, b); errors.Is(err, timeline.ErrFull) {
		return nil, fmt.Errorf("%w: %w", apierr.ErrQuota, err)
	} else if err != nil {
		return nil, err
	}
	return struct{}{}, nil
}

// handleTimeline is GET PathTaskTimeline?after=SEQ[&wait=1].
func (m *Manager) handleTimeline(r *http.Request) (any, error) {
	after, err := afterParam(r)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	id := r.PathValue("id")
	if r.URL.Query().Get("wait") == "" {
		return m.taskTimeline(ctx, id, after)
	}
	ctx, cancel := context.WithTimeout(ctx, timelineFollow)
	defer cancel()
	for {
		changed := m.timeline.Changed()
		tl, err := m.taskTimeline(ctx, id, after)
		if err != nil || len(tl.Entries) > 0 || !tl.Live {
			return tl, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return tl, nil
		}
	}
}

// afterParam is a request's ?after=SEQ (0 without one).
func afterParam(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("after")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: after=%q: want the seq of the last entry you have (0 or more)", apierr.ErrBadRequest, v)
	}
	return n, nil
}

// taskTimeline is a task's timeline, its entries after seq after.
func (m *Manager) taskTimeline(ctx context.Context, id string, after int64) (api.Timeline, error) {
	t, err := m.db.GetTask(ctx, id)
	if err != nil {
		return api.Timeline{}, err
	}
	tl := api.Timeline{Task: taskView(t), Live: t.Active(time.Now())}
	if sp, err := m.specOf(ctx, t.StoreID); err == nil {
		tl.Task.StoreSlug = sp.Slug
		tl.Mode, tl.ModeFrom = m.timelineMode(sp)
	} else {
		tl.Mode, tl.ModeFrom = m.cfg.Timeline, "VIBE_TIMELINE"
	}
	if tl.Entries, err = m.timeline.Entries(ctx, id, after); err != nil {
		return api.Timeline{}, err
	}
	return tl, nil
}

// handleShot is GET PathTaskShot: one shot's JPEG.
func (m *Manager) handleShot(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 {
		m.writeError(w, r, fmt.Errorf("%w: seq %q: want an entry's number", apierr.ErrBadRequest, r.PathValue("seq")))
		return
	}
	b, err := m.timeline.Shot(r.Context(), r.PathValue("id"), seq)
	if errors.Is(err, timeline.ErrNoShot) {
		err = fmt.Errorf("%w: %w", state.ErrNotFound, err)
	}
	if err != nil {
		m.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}

// handleExport is GET PathTaskExport: the task's timeline as one self-contained HTML file.
func (m *Manager) handleExport(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	tl, err := m.taskTimeline(ctx, id, 0)
	if err != nil {
		m.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	err = ui.Export(w, tl, func(seq int64) ([]byte, error) { return m.timeline.Shot(ctx, id, seq) })
	if err != nil {
		m.log.Warn().Err(err).Str("task", id).Msg("export a timeline")
	}
}
