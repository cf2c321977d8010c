package localapi

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/manager/tasks"
	"vibebrowser/manager/ui"
	"vibebrowser/state"
)

// The API's handlers, in the order of the route table (routes.go). Each decodes its request, calls the
// domain (the Daemon, the task, handoff and timeline desks) and returns the view to print.

func (h *Handler) health(_ *http.Request, _ Caller) (any, error) {
	return api.Health{OK: !h.Fleet.Quitting(), Version: h.Version, PID: os.Getpid()}, nil
}

func (h *Handler) status(r *http.Request, _ Caller) (any, error) { return h.Daemon.Status(r.Context()) }

func (h *Handler) listStores(r *http.Request, _ Caller) (any, error) {
	stores, err := h.DB.ListStores(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]api.Store, 0, len(stores))
	for _, s := range stores {
		out = append(out, h.Daemon.StoreView(s))
	}
	return out, nil
}

func (h *Handler) createStore(r *http.Request, _ Caller) (any, error) {
	var in api.StoreSpec
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	s, err := h.Daemon.CreateStore(r.Context(), in)
	if err != nil {
		return nil, err
	}
	return h.Daemon.StoreView(s), nil
}

func (h *Handler) getStore(r *http.Request, _ Caller) (any, error) {
	s, err := h.Daemon.FindStore(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	return h.Daemon.StoreView(s), nil
}

func (h *Handler) updateStore(r *http.Request, _ Caller) (any, error) {
	var u api.StoreUpdate
	if err := decode(r, &u); err != nil {
		return nil, err
	}
	s, err := h.Daemon.UpdateStore(r.Context(), r.PathValue("ref"), u)
	if err != nil {
		return nil, err
	}
	return h.Daemon.StoreView(s), nil
}

func (h *Handler) deleteStore(r *http.Request, _ Caller) (any, error) {
	return struct{}{}, h.Daemon.DeleteStore(r.Context(), r.PathValue("ref"))
}

func (h *Handler) storeBrowser(r *http.Request, _ Caller) (any, error) {
	ctx := r.Context()
	s, err := h.Daemon.FindStore(ctx, r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	sp, err := browsers.StoreSpec(s)
	if err != nil {
		return nil, err
	}
	if err := h.Daemon.BrowserAction(ctx, sp, r.PathValue("action")); err != nil {
		return nil, err
	}
	return h.Daemon.StoreView(s), nil
}

func (h *Handler) webBrowser(r *http.Request, _ Caller) (any, error) {
	ctx := r.Context()
	sp, err := h.Fleet.WebSpec(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.Daemon.BrowserAction(ctx, sp, r.PathValue("action")); err != nil {
		return nil, err
	}
	return h.Daemon.WebView(ctx, sp)
}

func (h *Handler) web(r *http.Request, _ Caller) (any, error) {
	sp, err := h.Fleet.WebSpec(r.Context())
	if err != nil {
		return nil, err
	}
	return h.Daemon.WebView(r.Context(), sp)
}

// ensure is the shim's call: the browser made ready, the task's lease renewed, the client's endpoint
// returned. A task asks only for its own store, as itself, for its own clients.
func (h *Handler) ensure(r *http.Request, c Caller) (any, error) {
	var req api.EnsureRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := c.ownClient(&req.Kind, &req.StoreID, &req.TaskID, req.ClientID); err != nil {
		return nil, err
	}
	return h.Daemon.Ensure(r.Context(), req)
}

func (h *Handler) listTasks(r *http.Request, _ Caller) (any, error) {
	all, err := h.DB.ListTasks(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]api.Task, 0, len(all))
	for _, t := range all {
		out = append(out, tasks.View(t))
	}
	return out, nil
}

func (h *Handler) getTask(r *http.Request, _ Caller) (any, error) {
	t, err := h.DB.GetTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return tasks.View(t), nil
}

// putTask records the app's view of a task. The lease is renewed with every report, so a task the app
// keeps reporting never expires.
func (h *Handler) putTask(r *http.Request, _ Caller) (any, error) {
	ctx := r.Context()
	var u api.TaskUpdate
	if err := decode(r, &u); err != nil {
		return nil, err
	}
	status, err := state.ParseTaskStatus(u.Status)
	if err != nil {
		return nil, err
	}
	storeID := ""
	if u.Store != "" {
		s, err := h.Daemon.FindStore(ctx, u.Store)
		if err != nil {
			return nil, err
		}
		storeID = s.ID
	}
	t, err := h.DB.UpsertTask(ctx, state.Task{ID: r.PathValue("id"), StoreID: storeID, Status: status,
		LeaseUntil: time.Now().Add(h.Cfg.TaskLease)})
	if err != nil {
		return nil, err
	}
	if t.Status.Ended() {
		h.Tasks.Ended(ctx, t.ID)
	}
	return tasks.View(t), nil
}

func (h *Handler) deleteTask(r *http.Request, _ Caller) (any, error) {
	id := r.PathValue("id")
	if err := h.DB.DeleteTask(r.Context(), id); err != nil {
		return nil, err
	}
	h.Tasks.Ended(r.Context(), id)
	return struct{}{}, nil
}

func (h *Handler) writeWrappers(r *http.Request, _ Caller) (any, error) {
	return struct{}{}, h.Wrappers.Sync(r.Context())
}

// uiLogin mints a one-time login code for the web UI (`vibe-browser ui`). Only the socket's own uid
// can reach this route, which is what makes the code worth trusting.
func (h *Handler) uiLogin(_ *http.Request, _ Caller) (any, error) {
	if h.Daemon.UI() == nil {
		return nil, fmt.Errorf("%w: the web UI is off (VIBE_UI_ADDR=off); set VIBE_UI_ADDR to a host:port "+
			"(default %s) and restart the manager", apierr.ErrUnavailable, config.DefaultUIAddr)
	}
	return h.Daemon.UI().NewLogin(), nil
}

// storeLogin is `vibe-browser store login`: the store's browser made ready (the same lock and
// budget as an agent's ensure), a human tab opened in it, and a login link that lands on its live view.
func (h *Handler) storeLogin(r *http.Request, _ Caller) (any, error) {
	ctx := r.Context()
	if h.Daemon.UI() == nil {
		return nil, fmt.Errorf("%w: the web UI is off (VIBE_UI_ADDR=off), and a store is logged in through it; "+
			"set VIBE_UI_ADDR to a host:port (default %s) and restart the manager", apierr.ErrUnavailable, config.DefaultUIAddr)
	}
	var req api.StoreLoginRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	target, err := ui.TabURL(req.URL)
	if err != nil {
		return nil, fmt.Errorf("%w: --url: %w", apierr.ErrBadRequest, err)
	}
	s, err := h.Daemon.FindStore(ctx, r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	sp, err := browsers.StoreSpec(s)
	if err != nil {
		return nil, err
	}
	in, err := h.Fleet.Ensure(ctx, sp)
	if err != nil {
		return nil, err
	}
	// Bounded: Chrome answers a createTarget at once; one that hangs is a wedged browser, not a wait.
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	id, err := in.Mux().Operator().NewHumanTab(tctx, target)
	if err != nil {
		return nil, fmt.Errorf("open a human tab in %s: %w", sp.Name, err)
	}
	login, err := h.Daemon.UI().NewLoginTo("/store/" + s.Slug + "/tab/" + id)
	if err != nil {
		return nil, err
	}
	h.Log.Info().Str("store", s.Slug).Str("tab", id).Msg("opened a human tab for a login")
	return api.StoreLogin{UILogin: login, Store: s.Slug, Tab: id}, nil
}

// mintTaskToken is POST PathTaskToken (tasks.Desk.Mint): the launcher's call, the owner's only.
func (h *Handler) mintTaskToken(r *http.Request, _ Caller) (any, error) {
	id := r.PathValue("id")
	if err := tasks.CheckID(id); err != nil {
		return nil, err
	}
	var req api.TaskTokenRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return h.Tasks.Mint(r.Context(), id, req)
}

func (h *Handler) reap(r *http.Request, _ Caller) (any, error) {
	res, err := h.Daemon.Reap(r.Context())
	if err != nil {
		return nil, err
	}
	return api.ReapResult{Killed: nonNil(res.Killed), Removed: nonNil(res.Removed), Kept: nonNil(res.Kept)}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// metrics is GET PathMetrics: the daemon's Prometheus series.
func (h *Handler) metrics(w http.ResponseWriter, r *http.Request) { h.Metrics.ServeHTTP(w, r) }
