package localapi

import (
	"fmt"
	"net/http"

	"vibebrowser/manager/api"
	"vibebrowser/mux/errdefs"
)

// Who may call a route.
type Who int

const (
	// Owner is the manager's own user, on the owner's socket (run/manager.sock).
	Owner Who = iota + 1
	// Task is an agent's task, by its token on the agents' socket (run/agent.sock).
	Task
	// Any is either; the handler decides by its caller what a task may see (its own store, task, sessions,
	// handoffs and downloads only).
	Any
)

func (w Who) String() string {
	switch w {
	case Owner:
		return "owner"
	case Task:
		return "task"
	case Any:
		return "any"
	}
	return fmt.Sprintf("Who(%d)", int(w))
}

// allows reports whether a caller may call a route for w.
func (w Who) allows(c Caller) bool {
	switch w {
	case Owner:
		return c.Owner()
	case Task:
		return !c.Owner()
	}
	return w == Any
}

// route is one entry of the local API (SPEC §4.2): its method and pattern, who may call it, and its handler,
// which answers a value printed as JSON (call) or writes its own answer (raw).
type route struct {
	method, pattern string
	who             Who
	call            func(h *Handler, r *http.Request, c Caller) (any, error)
	raw             func(h *Handler, w http.ResponseWriter, r *http.Request)
}

// routes is the local API, both sockets': a task's calls name Task or Any.
var routes = []route{
	{method: "GET", pattern: api.PathHealth, who: Owner, call: (*Handler).health},
	{method: "GET", pattern: api.PathStatus, who: Owner, call: (*Handler).status},
	{method: "GET", pattern: api.PathStores, who: Owner, call: (*Handler).listStores},
	{method: "POST", pattern: api.PathStores, who: Owner, call: (*Handler).createStore},
	{method: "GET", pattern: api.PathStore, who: Owner, call: (*Handler).getStore},
	{method: "PATCH", pattern: api.PathStore, who: Owner, call: (*Handler).updateStore},
	{method: "DELETE", pattern: api.PathStore, who: Owner, call: (*Handler).deleteStore},
	{method: "POST", pattern: api.PathStoreBrowser, who: Owner, call: (*Handler).storeBrowser},
	{method: "GET", pattern: api.PathWeb, who: Owner, call: (*Handler).web},
	{method: "POST", pattern: api.PathWebBrowser, who: Owner, call: (*Handler).webBrowser},
	{method: "POST", pattern: api.PathSessionEnsure, who: Any, call: (*Handler).ensure},
	{method: "GET", pattern: api.PathTasks, who: Owner, call: (*Handler).listTasks},
	{method: "GET", pattern: api.PathTask, who: Owner, call: (*Handler).getTask},
	{method: "PUT", pattern: api.PathTask, who: Owner, call: (*Handler).putTask},
	{method: "DELETE", pattern: api.PathTask, who: Owner, call: (*Handler).deleteTask},
	{method: "POST", pattern: api.PathTaskToken, who: Owner, call: (*Handler).mintTaskToken},
	{method: "POST", pattern: api.PathWrappers, who: Owner, call: (*Handler).writeWrappers},
	{method: "POST", pattern: api.PathEvents, who: Any, call: (*Handler).event},
	{method: "GET", pattern: api.PathEvents, who: Owner, call: (*Handler).listEvents},
	{method: "POST", pattern: api.PathReap, who: Owner, call: (*Handler).reap},
	{method: "POST", pattern: api.PathUILogin, who: Owner, call: (*Handler).uiLogin},
	{method: "POST", pattern: api.PathStoreLogin, who: Owner, call: (*Handler).storeLogin},
	{method: "GET", pattern: api.PathStoreSnapshots, who: Owner, call: (*Handler).listSnapshots},
	{method: "POST", pattern: api.PathStoreSnapshots, who: Owner, call: (*Handler).takeSnapshot},
	{method: "POST", pattern: api.PathStoreRestore, who: Owner, call: (*Handler).restore},
	{method: "POST", pattern: api.PathStoreMove, who: Owner, call: (*Handler).moveStore},
	{method: "GET", pattern: api.PathHandoffs, who: Owner, call: (*Handler).listHandoffs},
	{method: "POST", pattern: api.PathHandoffs, who: Any, call: (*Handler).createHandoff},
	{method: "GET", pattern: api.PathHandoff, who: Any, call: (*Handler).getHandoff},
	{method: "GET", pattern: api.PathHandoffWait, who: Any, call: (*Handler).waitHandoff},
	{method: "POST", pattern: api.PathHandoffAnswer, who: Owner, call: (*Handler).answerHandoff},
	{method: "POST", pattern: api.PathHandoffCancel, who: Any, call: (*Handler).cancelHandoff},
	{method: "GET", pattern: api.PathDownloads, who: Any, call: (*Handler).listDownloads},
	{method: "POST", pattern: api.PathTaskCalls, who: Any, call: (*Handler).taskCall},
	{method: "GET", pattern: api.PathTaskTimeline, who: Owner, call: (*Handler).timeline},
	{method: "GET", pattern: api.PathTaskShot, who: Owner, raw: (*Handler).shot},
	{method: "GET", pattern: api.PathTaskExport, who: Owner, raw: (*Handler).export},
	{method: "GET", pattern: api.PathMetrics, who: Owner, raw: (*Handler).metrics},
}

// mux is the route table served: each route admits its caller (callerOf) and checks who may call it
// before its handler runs.
func (h *Handler) mux() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range routes {
		mux.HandleFunc(rt.method+" "+rt.pattern, func(w http.ResponseWriter, r *http.Request) {
			if onAgents(r) && rt.who == Owner {
				h.writeError(w, r, notServedToTasks(r))
				return
			}
			c, err := h.callerOf(r)
			if err == nil && !rt.who.allows(c) {
				err = fmt.Errorf("%w: %s %s is served to a task only, on %s", errdefs.ErrForbidden, r.Method, r.URL.Path, api.AgentSocketRel)
			}
			if err != nil {
				h.writeError(w, r, err)
				return
			}
			if rt.raw != nil {
				rt.raw(h, w, r)
				return
			}
			out, err := rt.call(h, r, c)
			if err != nil {
				h.writeError(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if onAgents(r) {
			h.writeError(w, r, notServedToTasks(r))
			return
		}
		h.writeError(w, r, fmt.Errorf("%w: no route %s %s", errdefs.ErrNoRoute, r.Method, r.URL.Path))
	})
	return mux
}

// notServedToTasks is the agents' socket's answer to a call it does not serve.
func notServedToTasks(r *http.Request) error {
	return fmt.Errorf("%w: %s %s is not served on %s, which serves a task's own calls (ensure, "+
		"events, its handoffs, its downloads, its call reports); the owner's socket %s serves the rest, to the manager's own user",
		errdefs.ErrForbidden, r.Method, r.URL.Path, api.AgentSocketRel, api.SocketRel)
}
