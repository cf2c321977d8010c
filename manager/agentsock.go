package manager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/mux/clientid"
	"vibebrowser/state"
)

// The agents' door (SPEC §14): run/agent.sock, which any user may connect to, serves a task's own calls
// (ensure, events, its handoffs, its downloads) to the peer that is its store's agent user and presents the
// task's token. Everything else stays on run/manager.sock, the owner's.

// peerKey carries a connection's peer uid into its requests.
type peerKey struct{}

// agentCall is an admitted call on the agents' socket: the task its token stands for.
type agentCall struct {
	token state.TaskToken
	kind  string // api.KindStore or api.KindWeb
	name  string // its browser's, for messages: "store Acme", "the web browser"
	base  string // its sessions' base name: the store's slug, or api.WebSlug
}

// agentRoutes is the agents' socket's API: the routes the shim and vibe-browser mcp call, each checked
// against the caller's task.
func (m *Manager) agentRoutes() http.Handler {
	mux := http.NewServeMux()
	handle := func(pattern string, h func(r *http.Request, c agentCall) (any, error)) {
		mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
			c, err := m.admitAgent(r)
			var out any
			if err == nil {
				out, err = h(r, c)
			}
			if err != nil {
				m.writeError(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, out)
		})
	}
	handle("POST "+api.PathSessionEnsure, m.agentEnsure)
	handle("POST "+api.PathEvents, m.agentEvent)
	handle("POST "+api.PathHandoffs, m.agentCreateHandoff)
	handle("GET "+api.PathHandoff, m.agentHandoff(func(ctx context.Context, id string) (any, error) {
		h, err := m.db.GetHandoff(ctx, id)
		if err != nil {
			return nil, err
		}
		return m.handoffs.View(ctx, h)
	}))
	handle("GET "+api.PathHandoffWait, m.agentHandoff(func(ctx context.Context, id string) (any, error) {
		return m.handoffs.Wait(ctx, id)
	}))
	handle("POST "+api.PathHandoffCancel, m.agentHandoff(func(ctx context.Context, id string) (any, error) {
		return m.handoffs.Cancel(ctx, id)
	}))
	handle("GET "+api.PathDownloads, m.agentDownloads)
	handle("POST "+api.PathTaskCalls, m.agentTaskCall)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		m.writeError(w, r, fmt.Errorf("%w: %s %s is not served on %s, which serves a task's own calls (ensure, "+
			"events, its handoffs, its downloads, its call reports); the owner's socket %s serves the rest, to the manager's own user",
			apierr.ErrForbidden, r.Method, r.URL.Path, api.AgentSocketRel, api.SocketRel))
	})
	return mux
}

// admitAgent checks a call's token and peer: a live task token (401 without one), presented by the store's
// agent user (the manager's own user for a store without one).
func (m *Manager) admitAgent(r *http.Request) (agentCall, error) {
	auth := r.Header.Get("Authorization")
	token, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || token == "" {
		return agentCall{}, fmt.Errorf("%w: %s serves a task's own calls: send Authorization: Bearer $%s, the "+
			"token vibe-browser agent gives the task", apierr.ErrUnauthorized, api.AgentSocketRel, api.TaskTokenEnv)
	}
	tt, err := m.db.LookupTaskToken(r.Context(), token)
	if errors.Is(err, state.ErrNotFound) {
		return agentCall{}, fmt.Errorf("%w: this task token was never minted, or its task has ended: start the "+
			"task again with vibe-browser agent", apierr.ErrUnauthorized)
	}
	if err != nil {
		return agentCall{}, err
	}
	uid, _ := r.Context().Value(peerKey{}).(int)
	sp, want, who, err := m.agentUID(r.Context(), tt.StoreID)
	if err != nil {
		return agentCall{}, err
	}
	if uid != want {
		return agentCall{}, fmt.Errorf("%w: task %s's token is for %s: only its agent user (%s, uid %d) may present "+
			"it, and this caller runs as uid %d", apierr.ErrForbidden, tt.TaskID, sp.Name, who, want, uid)
	}
	c := agentCall{token: tt, kind: api.KindStore, name: sp.Name, base: sp.Slug}
	if tt.StoreID == "" {
		c.kind, c.base = api.KindWeb, api.WebSlug
	}
	return c, nil
}

// agentUID is who may call for a store's tasks ("" for the web browser), with the store's spec: its agent
// user, else the manager's own user.
func (m *Manager) agentUID(ctx context.Context, storeID string) (browsers.Spec, int, string, error) {
	var sp browsers.Spec
	var err error
	if storeID == "" {
		sp, err = m.fleet.WebSpec(ctx)
	} else {
		sp, err = m.fleet.SpecFor(ctx, storeID)
	}
	if err != nil {
		return sp, 0, "", err
	}
	bc := m.cfg.Browsers()
	agent, err := bc.Agent(sp)
	if err != nil {
		return sp, 0, "", err
	}
	if agent == nil {
		return sp, os.Getuid(), "the manager's own user", nil
	}
	return sp, agent.UID, agent.Name, nil
}

// own checks that a request names the caller's own store and task, filling what it leaves out.
func (c agentCall) own(kind, storeID, taskID *string) error {
	if *kind == "" {
		*kind = c.kind
	}
	if *taskID == "" {
		*taskID = c.token.TaskID
	}
	switch {
	case *kind != c.kind || *kind == api.KindStore && *storeID != c.token.StoreID:
		return c.notOwnStore("")
	case *taskID != c.token.TaskID:
		return fmt.Errorf("%w: this task token is task %s's: a task calls only as itself, not as task %s",
			apierr.ErrForbidden, c.token.TaskID, *taskID)
	}
	return nil
}

// notOwnStore is the refusal of a call for another store than the token's (SPEC §20: 403, never an answer
// about another store, not even an empty one); what says what the call asked for, or "".
func (c agentCall) notOwnStore(what string) error {
	if what != "" {
		what = " (" + what + ")"
	}
	return fmt.Errorf("%w: this task token is for %s: a task calls only for its own store%s", apierr.ErrForbidden, c.name, what)
}

// ownClient checks that a mux client id is one of the caller's task's own (the task id, or its -wN worker),
// or its store's aux session, which every task of the store may open (SPEC §3's --session <slug>-aux; the
// web browser has none). The caller has checked the request's store against the token's (own).
func (c agentCall) ownClient(id string) error {
	if id == api.AuxClient && c.kind == api.KindStore {
		return nil
	}
	if clientid.OwnerDir(id) != c.token.TaskID {
		aux := ""
		if c.kind == api.KindStore {
			aux = ", or its store's " + api.AuxClient
		}
		return fmt.Errorf("%w: client %s is not task %s's: a task connects as its own clients only (%s or %s-wN%s)",
			apierr.ErrForbidden, id, c.token.TaskID, c.token.TaskID, c.token.TaskID, aux)
	}
	return nil
}

func (m *Manager) agentEnsure(r *http.Request, c agentCall) (any, error) {
	var req api.EnsureRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := c.own(&req.Kind, &req.StoreID, &req.TaskID); err != nil {
		return nil, err
	}
	if err := c.ownClient(req.ClientID); err != nil {
		return nil, err
	}
	return m.ensureSession(r.Context(), req)
}

func (m *Manager) agentEvent(r *http.Request, c agentCall) (any, error) {
	var ev api.Event
	if err := decode(r, &ev); err != nil {
		return nil, err
	}
	kind := api.KindStore
	if ev.StoreID == "" {
		kind = api.KindWeb
	}
	if err := c.own(&kind, &ev.StoreID, &ev.TaskID); err != nil {
		return nil, err
	}
	if err := checkReport(ev); err != nil {
		return nil, err
	}
	if err := c.ownSession(ev.BUName, m.cfg.WorkerSlots); err != nil {
		return nil, err
	}
	return m.recordEvent(ev)
}

// ownSession checks that a shim's report names a session of the caller's task (SPEC §3's table): its own,
// one of its --worker slots', or its store's aux session.
func (c agentCall) ownSession(buName string, slots int) error {
	own, _ := api.SessionNames(c.base, c.token.TaskID, 0, false)
	forms := own
	if buName == own {
		return nil
	}
	for n := 1; n <= slots; n++ {
		if bu, _ := api.SessionNames(c.base, c.token.TaskID, n, false); buName == bu {
			return nil
		}
	}
	if slots > 0 {
		forms += fmt.Sprintf(", %s-wN with N from 1 to %d", own, slots)
	}
	if c.kind == api.KindStore {
		aux, _ := api.SessionNames(c.base, c.token.TaskID, 0, true)
		if buName == aux {
			return nil
		}
		forms += ", " + aux
	}
	return fmt.Errorf("%w: session %q is not task %s's: a shim reports only on its task's own sessions (%s)",
		apierr.ErrForbidden, buName, c.token.TaskID, forms)
}

func (m *Manager) agentCreateHandoff(r *http.Request, c agentCall) (any, error) {
	var req api.HandoffRequest
	if err := decode(r, &req); err != nil {
		return nil, err
	}
	if err := c.own(&req.Kind, &req.StoreID, &req.TaskID); err != nil {
		return nil, err
	}
	if err := c.ownClient(req.ClientID); err != nil {
		return nil, err
	}
	return m.handoffs.Create(r.Context(), req)
}

// agentHandoff serves one of the caller's task's own handoffs through do.
func (m *Manager) agentHandoff(do func(ctx context.Context, id string) (any, error)) func(*http.Request, agentCall) (any, error) {
	return func(r *http.Request, c agentCall) (any, error) {
		id := r.PathValue("id")
		h, err := m.db.GetHandoff(r.Context(), id)
		if err != nil {
			return nil, err
		}
		switch {
		case h.StoreID != c.token.StoreID:
			return nil, c.notOwnStore("handoff " + id + " is another browser's")
		case h.TaskID != c.token.TaskID:
			return nil, fmt.Errorf("%w: handoff %s is not task %s's: a task sees only its own handoffs",
				apierr.ErrForbidden, id, c.token.TaskID)
		}
		return do(r.Context(), id)
	}
}

func (m *Manager) agentDownloads(r *http.Request, c agentCall) (any, error) {
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
		k, err := m.browserKey(r.Context(), ref)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return nil, err
		}
		if k != key {
			return nil, c.notOwnStore(fmt.Sprintf("its downloads query names store %q", ref))
		}
	}
	return m.listDownloads(r.Context(), state.DownloadFilter{TaskID: c.token.TaskID, Key: key})
}

// listenAgents binds the agents' socket: 0666, since the agent users are many, and each request learns its
// peer's uid (admitAgent decides).
func listenAgents(path string) (net.Listener, error) { return bindSocket(path, 0o666) }

// agentServer serves the agents' socket: a connection silent for VIBE_AGENT_IDLE_S, before its first request
// (or its header) or between requests, is closed, so idle connections hold no descriptor for long
// (capAgents bounds how many one uid holds at once).
func (m *Manager) agentServer() *http.Server {
	return &http.Server{Handler: m.agentRoutes(), ReadHeaderTimeout: m.cfg.AgentIdle, IdleTimeout: m.cfg.AgentIdle,
		ConnContext: peerContext}
}

// capAgents bounds the connections each peer uid holds open to the agents' socket (VIBE_AGENT_CONN_MAX):
// one past it is answered 429 naming the knob and closed at once, so that no uid (any local user may
// connect) can take the manager's descriptors, and the other agent users and the owner's socket are served.
// vibe_agent_connections shows the connections open.
func (m *Manager) capAgents(ln net.Listener) net.Listener {
	l := &agentListener{Listener: ln, max: m.cfg.AgentConnMax, open: map[int]int{},
		refused: func() { m.metrics.quotaHit(quotaAgentConn) }, refusing: make(chan struct{}, agentRefusals)}
	m.metrics.registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vibe_agent_connections", Help: "Connections open to run/agent.sock (VIBE_AGENT_CONN_MAX bounds each peer uid's).",
	}, func() float64 { return float64(l.total()) }))
	return l
}

// agentListener counts each peer uid's open connections and refuses those past max.
type agentListener struct {
	net.Listener
	max     int
	refused func()

	refusing chan struct{}  // a slot per refusal being said (capacity agentRefusals)
	said     sync.WaitGroup // the refusals being said: Close waits for them

	mu     sync.Mutex  // mu guards the fields below
	open   map[int]int // peer uid -> its connections open
	closed bool        // no refusal starts once Close waits for them
}

// agentRefusals bounds the refusals said at once, each for at most refuseLinger: past it a connection over
// its uid's cap is closed unanswered, so that a flood costs the manager no more descriptors than this.
const agentRefusals = 32

// agentConn is an admitted connection to the agents' socket and its peer's uid (-1 when it cannot be
// read, which no agent user has).
type agentConn struct {
	net.Conn
	uid     int
	release sync.Once
	l       *agentListener
}

func (c *agentConn) Close() error {
	c.release.Do(func() { c.l.done(c.uid) })
	return c.Conn.Close()
}

func (l *agentListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid := -1
		if uc, ok := c.(*net.UnixConn); ok {
			if id, err := peerUID(uc); err == nil {
				uid = id
			}
		}
		if l.take(uid) {
			return &agentConn{Conn: c, uid: uid, l: l}, nil
		}
		l.refused()
		l.refuse(c, fmt.Sprintf("%v: uid %d already holds %d connections to %s, its quota (VIBE_AGENT_CONN_MAX=%d): "+
			"close the ones it keeps idle, or raise the knob", apierr.ErrQuota, uid, l.max, api.AgentSocketRel, l.max))
	}
}

// refuse says msg to c from a goroutine of its own, while fewer than agentRefusals are being said, else
// closes c unanswered.
func (l *agentListener) refuse(c net.Conn, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.refusing <- struct{}{}:
		if !l.closed {
			l.said.Go(func() {
				defer func() { <-l.refusing }()
				refuseConn(c, msg)
			})
			return
		}
		<-l.refusing
	default:
	}
	c.Close()
}

// Close stops accepting and waits for the refusals being said.
func (l *agentListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.said.Wait()
	return err
}

func (l *agentListener) take(uid int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[uid] >= l.max {
		return false
	}
	l.open[uid]++
	return true
}

func (l *agentListener) done(uid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[uid]--; l.open[uid] <= 0 {
		delete(l.open, uid)
	}
}

func (l *agentListener) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, k := range l.open {
		n += k
	}
	return n
}

// refuseLinger bounds a refusal: its write, and the wait for what the peer sends meanwhile.
const refuseLinger = 100 * time.Millisecond

// refuseConn answers a connection that is not served with 429 and msg, as the API's errors read, and closes
// it. Its request is read and dropped until the peer is done or refuseLinger passes, so that a client that
// sends it just after connecting gets the answer rather than a broken pipe.
func refuseConn(c net.Conn, msg string) {
	defer c.Close()
	body, _ := json.Marshal(api.Error{Message: msg, Code: api.CodeQuota})
	_ = c.SetDeadline(time.Now().Add(refuseLinger))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Connection: close\r\n\r\n%s", len(body), body)
	if uc, ok := c.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}

// peerContext is the agents' server's ConnContext: the peer's uid (-1 when it cannot be read, which no
// agent user has).
func peerContext(ctx context.Context, c net.Conn) context.Context {
	uid := -1
	switch conn := c.(type) {
	case *agentConn:
		uid = conn.uid
	case *net.UnixConn:
		if id, err := peerUID(conn); err == nil {
			uid = id
		}
	}
	return context.WithValue(ctx, peerKey{}, uid)
}
