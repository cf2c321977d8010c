package localapi

import (
	"errors"
	"fmt"
	"net/http"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// event is POST PathEvents: a shim's report. A task reports only for its own store, as itself, on its own
// sessions.
func (h *Handler) event(r *http.Request, c Caller) (any, error) {
	var ev api.Event
	if err := decode(r, &ev); err != nil {
		return nil, err
	}
	if t := c.task; t != nil {
		kind := api.KindStore
		if ev.StoreID == "" {
			kind = api.KindWeb
		}
		if err := t.own(&kind, &ev.StoreID, &ev.TaskID); err != nil {
			return nil, err
		}
		if err := checkReport(ev); err != nil {
			return nil, err
		}
		if err := t.ownSession(ev.BUName, h.Cfg.WorkerSlots); err != nil {
			return nil, err
		}
	} else if err := checkReport(ev); err != nil {
		return nil, err
	}
	return struct{}{}, h.Daemon.RecordEvent(ev)
}

func (h *Handler) listEvents(*http.Request, Caller) (any, error) { return h.Daemon.Events(), nil }

// checkReport checks what any caller's report may be (the manager raises its own events and takes them from
// no caller): a shim's kind, with a bounded message of text.
func checkReport(ev api.Event) error {
	switch {
	case ev.Kind == "":
		return fmt.Errorf("%w: event kind is required", apierr.ErrBadRequest)
	case !api.ShimEventKind(ev.Kind):
		return fmt.Errorf("%w: event kind %q is not one a shim reports: the manager raises its own events itself "+
			"and takes them from no caller; a shim may report only %v", apierr.ErrForbidden, ev.Kind, api.ShimEventKinds)
	}
	if err := api.CheckHandoffText("event's message", ev.Message, api.MaxEventMessage); err != nil {
		return fmt.Errorf("%w: %w", apierr.ErrBadRequest, err)
	}
	return nil
}

// listDownloads is GET PathDownloads?task=ID&store=S (a store's name, slug or id, or "web"). A task lists
// only its own downloads, on its own store.
func (h *Handler) listDownloads(r *http.Request, c Caller) (any, error) {
	if c.task != nil {
		return h.taskDownloads(r, c.task)
	}
	ctx := r.Context()
	f := state.DownloadFilter{TaskID: r.URL.Query().Get("task")}
	if ref := r.URL.Query().Get("store"); ref != "" {
		var err error
		if f.Key, err = h.Downloads.BrowserKey(ctx, ref); err != nil {
			return nil, err
		}
	}
	return h.Downloads.List(ctx, f)
}

// taskDownloads is a task's own downloads.
func (h *Handler) taskDownloads(r *http.Request, c *taskCall) (any, error) {
	q := r.URL.Query()
	if task := q.Get("task"); task != "" && task != c.token.TaskID {
		return nil, fmt.Errorf("%w: this task token is task %s's: a task lists only its own downloads",
			apierr.ErrForbidden, c.token.TaskID)
	}
	key := c.token.StoreID
	if key == "" {
		key = api.WebKey
	}
	if ref := q.Get("store"); ref != "" {
		// A store that does not exist is refused alike: the answer tells nothing of which stores exist.
		k, err := h.Downloads.BrowserKey(r.Context(), ref)
		if err != nil && !errors.Is(err, errdefs.ErrNotFound) {
			return nil, err
		}
		if k != key {
			return nil, c.notOwnStore(fmt.Sprintf("its downloads query names store %q", ref))
		}
	}
	return h.Downloads.List(r.Context(), state.DownloadFilter{TaskID: c.token.TaskID, Key: key})
}
