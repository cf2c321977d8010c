package manager

import (
	"context"
	"errors"
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

// The API's handlers, in the order of the route table (server.go). Each decodes its request, calls the
// domain (stores.go, lifecycle.go, tasks.go, reap.go) and returns the view to print.

func (m *Manager) handleHealth(*http.Request) (any, error) {
	return api.Health{OK: !m.fleet.Quitting(), Version: m.version, PID: os.Getpid()}, nil
}

func (m *Manager) handleStatus(r *http.Request) (any, error) { return m.status(r.Context()) }

func (m *Manager) handleListStores(r *http.Request) (any, error) {
	stores, err := m.db.ListStores(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]api.Store, 0, len(stores))
	for _, s := range stores {
		out = append(out, m.storeView(s))
	}
	return out, nil
}

func (m *Manager) handleCreateStore(r *http.Request) (any, error) {
	var in api.StoreSpec
	if err := decode(r, &in); err != nil {
		return nil, err
	}
	s, err := m.createStore(r.Context(), in)
	if err != nil {
		return nil, err
	}
	return m.storeView(s), nil
}

func (m *Manager) handleGetStore(r *http.Request) (any, error) {
	s, err := m.findStore(r.Context(), r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	return m.storeView(s), nil
}

func (m *Manager) handleUpdateStore(r *http.Request) (any, error) {
	var u api.StoreUpdate
	if err := decode(r, &u); err != nil {
		return nil, err
	}
	s, err := m.updateStore(r.Context(), r.PathValue("ref"), u)
	if err != nil {
		return nil, err
	}
	return m.storeView(s), nil
}

func (m *Manager) handleDeleteStore(r *http.Request) (any, error) {
	return struct{}{}, m.deleteStore(r.Context(), r.PathValue("ref"))
}

func (m *Manager) handleStoreBrowser(r *http.Request) (any, error) {
	ctx := r.Context()
	s, err := m.findStore(ctx, r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	sp, err := browsers.StoreSpec(s)
	if err != nil {
		return nil, err
	}
	if err := m.browserAction(ctx, sp, r.PathValue("action")); err != nil {
		return nil, err
	}
	return m.storeView(s), nil
}

func (m *Manager) handleWebBrowser(r *http.Request) (any, error) {
	ctx := r.Context()
	sp, err := m.fleet.WebSpec(ctx)
	if err != nil {
		return nil, err
	}
	if err := m.browserAction(ctx, sp, r.PathValue("action")); err != nil {
		return nil, err
	}
	return m.webView(ctx, sp)
}

func (m *Manager) handleWeb(r *http.Request) (any, error) {
	sp, err := m.fleet.WebSpec(r.Context())
	if err != nil {
		return nil, err
	}
	return m.webView(r.Context(), sp)
}

// handleEnsureSession is the shim's call: the browser made ready, the task's lease renewed, the client's
// endpoint returned.
func (m *Manager) handleEnsureSession(r *http.Request) (any, error) {
	var req api.EnsureRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return m.ensureSession(r.Context(), req)
}

// ensureSession is ensure for a caller already admitted: on the owner's socket anyone, on the agents' a
// task asking for its own clients.
func (m *Manager) ensureSession(ctx context.Context, req api.EnsureRequest) (api.EnsureResponse, error) {
	began := time.Now()
	defer func() { m.metrics.ensureSeconds.Observe(time.Since(began).Seconds()) }()
	if err := tasks.CheckCaller(req.ClientID, req.BUName, req.TaskID); err != nil {
		return api.EnsureResponse{}, err
	}
	if req.Via != "" && req.Via != api.ViaMCP && req.Via != api.ViaCDP {
		return api.EnsureResponse{}, fmt.Errorf("%w: via %q: want %q, %q or none", apierr.ErrBadRequest, req.Via, api.ViaMCP, api.ViaCDP)
	}
	if m.cfg.BrowserUse == "" && req.Via == "" {
		return api.EnsureResponse{}, fmt.Errorf("%w: %s", apierr.ErrUnavailable, m.cfg.BrowserUseProblem)
	}
	var sp browsers.Spec
	switch req.Kind {
	case api.KindStore:
		s, err := m.shimStore(ctx, req.StoreID)
		if err != nil {
			return api.EnsureResponse{}, err
		}
		if sp, err = browsers.StoreSpec(s); err != nil {
			return api.EnsureResponse{}, err
		}
	case api.KindWeb:
		var err error
		if sp, err = m.fleet.WebSpec(ctx); err != nil {
			return api.EnsureResponse{}, err
		}
	default:
		return api.EnsureResponse{}, fmt.Errorf("%w: kind %q: want store or web", apierr.ErrBadRequest, req.Kind)
	}
	if req.TaskID != "" {
		storeID := ""
		if req.Kind == api.KindStore {
			storeID = sp.Key
		}
		if err := m.tasks.Touch(ctx, req.TaskID, storeID); err != nil {
			return api.EnsureResponse{}, err
		}
	}
	in, err := m.fleet.Ensure(ctx, sp)
	if err != nil {
		return api.EnsureResponse{}, err
	}
	resp := api.EnsureResponse{CDPWS: clientURL(in.Port(), sp.Token, req.ClientID), DownloadDir: m.downloadDir(sp, req.ClientID)}
	if req.TaskID != "" {
		resp.LeaseS = int(m.cfg.TaskLease / time.Second)
		resp.Timeline, _ = m.timeline.Mode(sp)
	}
	return resp, nil
}

// shimStore is the store a shim's baked config names; one that is gone means the wrapper is stale.
func (m *Manager) shimStore(ctx context.Context, id string) (state.Store, error) {
	s, err := m.db.GetStore(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		err = fmt.Errorf("store %s no longer exists; this wrapper is stale (restart the manager to clean it up): %w",
			id, state.ErrNotFound)
	}
	return s, err
}

func (m *Manager) handleListTasks(r *http.Request) (any, error) {
	all, err := m.db.ListTasks(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]api.Task, 0, len(all))
	for _, t := range all {
		out = append(out, tasks.View(t))
	}
	return out, nil
}

func (m *Manager) handleGetTask(r *http.Request) (any, error) {
	t, err := m.db.GetTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return tasks.View(t), nil
}

// handlePutTask records the app's view of a task. The lease is renewed with every report, so a task the app
// keeps reporting never expires.
func (m *Manager) handlePutTask(r *http.Request) (any, error) {
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
		s, err := m.findStore(ctx, u.Store)
		if err != nil {
			return nil, err
		}
		storeID = s.ID
	}
	t, err := m.db.UpsertTask(ctx, state.Task{ID: r.PathValue("id"), StoreID: storeID, Status: status,
		LeaseUntil: time.Now().Add(m.cfg.TaskLease)})
	if err != nil {
		return nil, err
	}
	if t.Status.Ended() {
		m.tasks.Ended(ctx, t.ID)
	}
	return tasks.View(t), nil
}

func (m *Manager) handleDeleteTask(r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := m.db.DeleteTask(r.Context(), id); err != nil {
		return nil, err
	}
	m.tasks.Ended(r.Context(), id)
	return struct{}{}, nil
}

func (m *Manager) handleWriteWrappers(r *http.Request) (any, error) {
	return struct{}{}, m.syncWrappers(r.Context())
}

// handleUILogin mints a one-time login code for the web UI (`vibe-browser ui`). Only the socket's own uid
// can reach this route, which is what makes the code worth trusting.
func (m *Manager) handleUILogin(*http.Request) (any, error) {
	if m.ui == nil {
		return nil, fmt.Errorf("%w: the web UI is off (VIBE_UI_ADDR=off); set VIBE_UI_ADDR to a host:port "+
			"(default %s) and restart the manager", apierr.ErrUnavailable, config.DefaultUIAddr)
	}
	return m.ui.NewLogin(), nil
}

// handleStoreLogin is `vibe-browser store login`: the store's browser made ready (the same lock and
// budget as an agent's ensure), a human tab opened in it, and a login link that lands on its live view.
func (m *Manager) handleStoreLogin(r *http.Request) (any, error) {
	ctx := r.Context()
	if m.ui == nil {
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
	s, err := m.findStore(ctx, r.PathValue("ref"))
	if err != nil {
		return nil, err
	}
	sp, err := browsers.StoreSpec(s)
	if err != nil {
		return nil, err
	}
	in, err := m.fleet.Ensure(ctx, sp)
	if err != nil {
		return nil, err
	}
	// Bounded: Chrome answers a createTarget at once; one that hangs is a wedged browser, not a wait.
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	id, err := in.Mux().NewHumanTab(tctx, target)
	if err != nil {
		return nil, fmt.Errorf("open a human tab in %s: %w", sp.Name, err)
	}
	login, err := m.ui.NewLoginTo("/store/" + s.Slug + "/tab/" + id)
	if err != nil {
		return nil, err
	}
	m.log.Info().Str("store", s.Slug).Str("tab", id).Msg("opened a human tab for a login")
	return api.StoreLogin{UILogin: login, Store: s.Slug, Tab: id}, nil
}

// handleMintTaskToken is POST PathTaskToken (tasks.Desk.Mint). Only the owner's socket serves it.
func (m *Manager) handleMintTaskToken(r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := tasks.CheckID(id); err != nil {
		return nil, err
	}
	var req api.TaskTokenRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	return m.tasks.Mint(r.Context(), id, req)
}

func (m *Manager) handleReap(r *http.Request) (any, error) {
	res, err := m.reap(r.Context())
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
