// Package localapi is the manager's local API (SPEC §4.2): one route table served on the owner's socket and
// the agents', each route naming who may call it, and the handlers that answer them.
package localapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/manager/handoffs"
	"vibebrowser/manager/localapi/answer"
	"vibebrowser/manager/reaper"
	"vibebrowser/manager/tasks"
	"vibebrowser/manager/timeline"
	"vibebrowser/manager/ui"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// Daemon is what the handlers ask of the daemon around them: its stores, browsers, events and wrappers.
type Daemon interface {
	Status(ctx context.Context) (api.Status, error)
	Ensure(ctx context.Context, req api.EnsureRequest) (api.EnsureResponse, error)
	Reap(ctx context.Context) (reaper.Result, error)
	Events() []api.Event
	RecordEvent(ev api.Event) error
	UI() *ui.Server // nil with the web UI off
	Stores
}

// Stores is what the handlers ask of the daemon's stores.
type Stores interface {
	StoreView(s state.Store) api.Store
	WebView(ctx context.Context, sp browsers.Spec) (api.WebBrowser, error)
	CreateStore(ctx context.Context, in api.StoreSpec) (state.Store, error)
	UpdateStore(ctx context.Context, ref string, u api.StoreUpdate) (state.Store, error)
	DeleteStore(ctx context.Context, ref string) error
	FindStore(ctx context.Context, ref string) (state.Store, error)
	BrowserAction(ctx context.Context, sp browsers.Spec, action string) error
}

// Downloads is what the handlers ask of the daemon's downloads.
type Downloads interface {
	// BrowserKey is the browser key ref names: a store's name, slug or id, or the web browser ("web").
	BrowserKey(ctx context.Context, ref string) (string, error)
	List(ctx context.Context, f state.DownloadFilter) ([]api.Download, error)
}

// Handler answers the local API's routes. Its fields are set once, before it serves.
type Handler struct {
	Log       zerolog.Logger
	Version   string
	Cfg       *config.Config
	DB        *state.DB
	Fleet     *browsers.Fleet
	Daemon    Daemon
	Downloads Downloads
	Tasks     *tasks.Desk
	Handoffs  *handoffs.Desk
	Timeline  *timeline.Desk
	Wrappers  interface {
		Sync(ctx context.Context) error
	} // POST PathWrappers rewrites them all
	Metrics http.Handler // GET /metrics
	Mover   Mover        // POST PathStoreMove; nil on a single host
}

// sideKey carries the connection's socket and peer into its requests.
type sideKey struct{}

// side is the socket a connection came in on, and its peer's uid (-1 when it cannot be read, which no agent
// user has).
type side struct {
	agents bool
	uid    int
}

// onAgents reports whether r came in on the agents' socket.
func onAgents(r *http.Request) bool {
	s, _ := r.Context().Value(sideKey{}).(side)
	return s.agents
}

// peerOf is the uid of r's peer on the agents' socket.
func peerOf(r *http.Request) int {
	s, _ := r.Context().Value(sideKey{}).(side)
	return s.uid
}

// OwnerServer serves the owner's socket (ListenOwner).
func (h *Handler) OwnerServer() *http.Server {
	return &http.Server{Handler: h.mux(), ReadHeaderTimeout: 10 * time.Second}
}

// AgentServer serves the agents' socket (ListenAgents, CapAgents): a connection silent for
// VIBE_AGENT_IDLE_S, before its first request (or its header) or between requests, is closed, so idle
// connections hold no descriptor for long (CapAgents bounds how many one uid holds at once).
func (h *Handler) AgentServer() *http.Server {
	return &http.Server{Handler: h.mux(), ReadHeaderTimeout: h.Cfg.AgentIdle, IdleTimeout: h.Cfg.AgentIdle,
		ConnContext: agentContext}
}

// agentContext is the agents' server's ConnContext: the connection is the agents' socket's, with its
// peer's uid.
func agentContext(ctx context.Context, c net.Conn) context.Context {
	uid := -1
	switch conn := c.(type) {
	case *agentConn:
		uid = conn.uid
	case *net.UnixConn:
		if id, err := peerUID(conn); err == nil {
			uid = id
		}
	}
	return context.WithValue(ctx, sideKey{}, side{agents: true, uid: uid})
}

// writeError answers err (its class's status) and logs it on the manager's log.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	answer.Error(w, r, h.Log, err)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// decode reads a JSON body strictly: unknown fields and trailing data are refused, naming the problem.
func decode(r *http.Request, v any) error {
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: request body: %v", errdefs.ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: request body: trailing data after the JSON object", errdefs.ErrInvalid)
	}
	return nil
}
