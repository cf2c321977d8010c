package localapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/timeline"
	"vibebrowser/manager/ui"
	"vibebrowser/mux/errdefs"
)

// taskCall is POST PathTaskCalls: a shim's report of a call's end. A task reports its own calls only. The
// shim does not wait for the answer (api.Client.PostCall): its connection is gone by now, so the report is
// recorded on a context of its own, not the request's, which ends with the connection.
func (h *Handler) taskCall(r *http.Request, c Caller) (any, error) {
	var rep api.CallReport
	if err := decode(r, &rep); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), reportBound)
	defer cancel()
	if t := c.task; t != nil {
		task, kind, storeID := r.PathValue("id"), t.kind, t.token.StoreID
		if err := t.own(&kind, &storeID, &task); err != nil {
			return nil, err
		}
		return struct{}{}, h.Timeline.Report(ctx, task, storeID, rep)
	}
	tk, err := h.DB.GetTask(ctx, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return struct{}{}, h.Timeline.Report(ctx, tk.ID, tk.StoreID, rep)
}

// reportBound bounds the recording of one call report's entry (the shots come after, on the recorder's own).
const reportBound = 10 * time.Second

// timeline is GET PathTaskTimeline?after=SEQ[&wait=1].
func (h *Handler) timeline(r *http.Request, _ Caller) (any, error) {
	after, err := afterParam(r)
	if err != nil {
		return nil, err
	}
	if r.URL.Query().Get("wait") == "" {
		return h.Timeline.Task(r.Context(), r.PathValue("id"), after)
	}
	return h.Timeline.Follow(r.Context(), r.PathValue("id"), after)
}

// afterParam is a request's ?after=SEQ (0 without one).
func afterParam(r *http.Request) (int64, error) {
	v := r.URL.Query().Get("after")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%w: after=%q: want the seq of the last entry you have (0 or more)", errdefs.ErrInvalid, v)
	}
	return n, nil
}

// shot is GET PathTaskShot: one shot's JPEG.
func (h *Handler) shot(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil || seq < 1 {
		h.writeError(w, r, fmt.Errorf("%w: seq %q: want an entry's number", errdefs.ErrInvalid, r.PathValue("seq")))
		return
	}
	b, err := h.Timeline.Shot(r.Context(), r.PathValue("id"), seq)
	if errors.Is(err, timeline.ErrNoShot) {
		err = fmt.Errorf("%w: %w", errdefs.ErrNotFound, err)
	}
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(b)
}

// export is GET PathTaskExport: the task's timeline as one self-contained HTML file.
func (h *Handler) export(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	id := r.PathValue("id")
	tl, err := h.Timeline.Task(ctx, id, 0)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	err = ui.Export(w, tl, func(seq int64) ([]byte, error) { return h.Timeline.Shot(ctx, id, seq) })
	if err != nil {
		h.Log.Warn().Err(err).Str("task", id).Msg("export a timeline")
	}
}
