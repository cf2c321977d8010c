package manager

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/timeline"
	"vibebrowser/manager/ui"
	"vibebrowser/state"
)

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
	return struct{}{}, m.timeline.Report(r.Context(), t.ID, t.StoreID, rep)
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
	return struct{}{}, m.timeline.Report(r.Context(), task, storeID, rep)
}

// handleTimeline is GET PathTaskTimeline?after=SEQ[&wait=1].
func (m *Manager) handleTimeline(r *http.Request) (any, error) {
	after, err := afterParam(r)
	if err != nil {
		return nil, err
	}
	if r.URL.Query().Get("wait") == "" {
		return m.timeline.Task(r.Context(), r.PathValue("id"), after)
	}
	return m.timeline.Follow(r.Context(), r.PathValue("id"), after)
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
	tl, err := m.timeline.Task(ctx, id, 0)
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
