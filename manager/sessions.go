package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/mux/clientid"
	"vibebrowser/state"
)

// handleEnsureSession is the shim's call: the browser made ready, the task's lease renewed, the client's
// endpoint returned.
func (m *Manager) handleEnsureSession(r *http.Request) (any, error) {
	began := time.Now()
	defer func() { m.metrics.ensureSeconds.Observe(time.Since(began).Seconds()) }()
	ctx := r.Context()
	var req api.EnsureRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if !clientid.Valid(req.ClientID) {
		return nil, fmt.Errorf("%w: client_id %q must match %s", ErrBadRequest, req.ClientID, clientid.Form)
	}
	if !api.ValidBUName(req.BUName) {
		return nil, fmt.Errorf("%w: bu_name %q must match [A-Za-z0-9_-]{1,64}", ErrBadRequest, req.BUName)
	}
	if req.TaskID != "" && !api.ValidTaskID(req.TaskID) {
		return nil, fmt.Errorf("%w: task_id %q: want %s", ErrBadRequest, req.TaskID, api.TaskIDForm)
	}
	if m.cfg.BrowserUse == "" {
		return nil, fmt.Errorf("%w: %s", ErrUnavailable, m.cfg.BrowserUseProblem)
	}
	var t target
	var err error
	switch req.Kind {
	case api.KindStore:
		var s state.Store
		if s, err = m.db.GetStore(ctx, req.StoreID); err != nil {
			if errors.Is(err, state.ErrNotFound) {
				err = fmt.Errorf("store %s no longer exists; this wrapper is stale (restart the manager to clean it up): %w",
					req.StoreID, state.ErrNotFound)
			}
			return nil, err
		}
		t, err = m.storeTarget(s)
	case api.KindWeb:
		t, err = m.webTarget(ctx)
	default:
		return nil, fmt.Errorf("%w: kind %q: want store or web", ErrBadRequest, req.Kind)
	}
	if err != nil {
		return nil, err
	}
	if req.TaskID != "" {
		storeID := ""
		if req.Kind == api.KindStore {
			storeID = t.key
		}
		if err := m.touchTask(ctx, req.TaskID, storeID); err != nil {
			return nil, err
		}
	}
	l, err := m.ensure(ctx, t)
	if err != nil {
		return nil, err
	}
	return api.EnsureResponse{CDPWS: clientURL(l.port, t.token, req.ClientID)}, nil
}

// leaseRenewEvery is the share of the task lease after which a shim call writes the lease again: calls in
// between find it fresh and write nothing, which keeps a write transaction off ensure's fast path. A lease
// is therefore at least 99% of VIBE_TASK_LEASE_S when its task's last call returns.
const leaseRenewEvery = 100

// leaseMemoPrune is the size at which touchTask's memory of written leases is pruned.
const leaseMemoPrune = 1024

// touchTask registers or renews a shim-called task (state.TouchTask), unless this manager wrote the same
// task's lease for the same store recently enough.
func (m *Manager) touchTask(ctx context.Context, id, storeID string) error {
	now := time.Now()
	m.leaseMu.Lock()
	last, ok := m.leased[id]
	m.leaseMu.Unlock()
	if ok && last.store == storeID && now.Sub(last.at) < m.cfg.TaskLease/leaseRenewEvery {
		return nil
	}
	if _, err := m.db.TouchTask(ctx, id, storeID, now.Add(m.cfg.TaskLease)); err != nil {
		return err
	}
	m.leaseMu.Lock()
	defer m.leaseMu.Unlock()
	if len(m.leased) >= leaseMemoPrune { // marks past the window decide nothing: drop them
		for k, v := range m.leased {
			if now.Sub(v.at) >= m.cfg.TaskLease/leaseRenewEvery {
				delete(m.leased, k)
			}
		}
	}
	m.leased[id] = leaseMark{store: storeID, at: now}
	return nil
}

// forgetLease drops what touchTask remembers of a task, so that its next shim call writes (and, after a
// deletion, registers it again).
func (m *Manager) forgetLease(id string) {
	m.leaseMu.Lock()
	delete(m.leased, id)
	m.leaseMu.Unlock()
}

// leaseMark is the last lease touchTask wrote for a task.
type leaseMark struct {
	store string
	at    time.Time
}

// clientURL is a mux client's WebSocket endpoint.
func clientURL(port int, token, clientID string) string {
	return "ws://127.0.0.1:" + strconv.Itoa(port) + "/" + token + "/client-" + clientID
}

func taskView(t state.Task) api.Task {
	return api.Task{ID: t.ID, Store: t.StoreID, Status: string(t.Status), LeaseUntil: t.LeaseUntil}
}

func (m *Manager) handleListTasks(r *http.Request) (any, error) {
	tasks, err := m.db.ListTasks(r.Context())
	if err != nil {
		return nil, err
	}
	out := make([]api.Task, 0, len(tasks))
	for _, t := range tasks {
		out = append(out, taskView(t))
	}
	return out, nil
}

func (m *Manager) handleGetTask(r *http.Request) (any, error) {
	t, err := m.db.GetTask(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	return taskView(t), nil
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
	if state.Ended(t.Status) {
		m.taskEnded(ctx, t.ID)
	}
	return taskView(t), nil
}

func (m *Manager) handleDeleteTask(r *http.Request) (any, error) {
	id := r.PathValue("id")
	if err := m.db.DeleteTask(r.Context(), id); err != nil {
		return nil, err
	}
	m.taskEnded(r.Context(), id)
	return struct{}{}, nil
}

func (m *Manager) handleEvent(r *http.Request) (any, error) {
	var ev api.Event
	if err := decode(r, &ev); err != nil {
		return nil, err
	}
	if ev.Kind == "" {
		return nil, fmt.Errorf("%w: event kind is required", ErrBadRequest)
	}
	m.metrics.events.WithLabelValues(ev.Kind).Inc()
	m.log.Warn().Str("event", ev.Kind).Str("store", ev.StoreID).Str("bu_name", ev.BUName).Str("task", ev.TaskID).
		Msg(ev.Message)
	return struct{}{}, nil
}

func (m *Manager) handleWriteWrappers(r *http.Request) (any, error) {
	return struct{}{}, m.syncWrappers(r.Context())
}

// browserView describes key's browser for the status.
func (m *Manager) browserView(key, slug string) api.Browser {
	v := api.Browser{Key: key, Slug: slug, Status: api.StatusStopped}
	if l := m.browserSlot(key).current(); l != nil {
		st := l.mux.Stats()
		v.Status, v.PID, v.ProxyPort, v.Clients, v.IdleS = api.StatusRunning, l.run.PID(), l.port, st.Clients, int(st.IdleSeconds)
		for _, c := range st.PerClient {
			v.Tabs += c.Tabs
		}
	}
	return v
}

func (m *Manager) handleStatus(r *http.Request) (any, error) {
	ctx := r.Context()
	stores, err := m.db.ListStores(ctx)
	if err != nil {
		return nil, err
	}
	tasks, err := m.db.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	st := api.Status{Version: m.version, PID: os.Getpid(), Home: m.cfg.Home, BrowserUse: m.cfg.BrowserUse,
		BrowserUseErr: m.cfg.BrowserUseProblem, Stores: []api.Store{}, Browsers: []api.Browser{}, Tasks: []api.Task{}}
	for _, s := range stores {
		st.Stores = append(st.Stores, m.storeView(s))
		st.Browsers = append(st.Browsers, m.browserView(s.ID, s.Slug))
	}
	st.Browsers = append(st.Browsers, m.browserView(api.WebKey, api.WebKey))
	for _, t := range tasks {
		st.Tasks = append(st.Tasks, taskView(t))
	}
	sort.Slice(st.Stores, func(i, j int) bool { return st.Stores[i].Slug < st.Stores[j].Slug })
	return st, nil
}
