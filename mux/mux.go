package mux

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"
)

// Mux is a CDP multiplexing proxy for one browser: many client WebSockets share one upstream browser
// connection, and each client sees and touches only its own targets. Create it with New, run it with Serve.
type Mux struct {
	cfg   Config
	log   zerolog.Logger
	ln    net.Listener // nil when the caller serves the mux on its own listener (Config.Port)
	door  Door
	files localFiles // the local-file rule (localfiles.go)
	// refusedLog logs refused calls, sampled: a client that keeps trying must not flood the log.
	refusedLog zerolog.Logger
	upgrader   websocket.Upgrader
	srv        *http.Server  // nil with ln
	ownCh      chan struct{} // capacity 1: one pending "ownership changed" is enough, the snapshot is taken later
	// relaunched carries the endpoint of a relaunched browser to the upstream loop (capacity 1, newest wins).
	relaunched chan string
	wg         sync.WaitGroup

	msgsIn, msgsOut, bytesIn, bytesOut atomic.Uint64

	mu sync.Mutex
	// mu guards the fields below: the routing tables, owned by whichever goroutine holds it. It is never
	// held across a network write; sends go through the non-blocking queues.
	closed   bool
	up       *upstream
	nextID   int32 // starts at random: a keeper drops answers to a gone mux's ids and refuses a new mux's reuse of one
	pending  map[int32]*pending
	clients  map[string]*client
	targets  map[string]*target
	order    []*target // targets in the order they appeared, for replays in Chrome's order
	sessions map[string]*session
	cr       *creates       // the Target.createTarget calls, one at a time (creates.go)
	version  map[string]any // cached /json/version object
	tick     uint64         // logical clock for LRU
	activity time.Time
	fresh    bool // orphan cleanup still due (FreshLaunch, first connect)
	// replacing: the browser is gone and its replacement is on its way; the upstream loop dials nothing
	// until Relaunched names it (Replacing).
	replacing bool
	// While the upstream reader routes a message (batching), frames for clients are queued quietly and
	// their connections collected in kicked; the upstream reader writes them itself after unlocking (see
	// conn.writeInline). Only the upstream reader goroutine sets batching or touches kicked.
	batching bool
	kicked   []*conn
	// upQuiet is set while a client reader routes its message: it writes the upstream queue itself
	// right after (upstream.writeNow), so its push need not wake the upstream writer.
	upQuiet bool

	// The features, each with its state (guarded by mu: see each type) and the hooks the core calls.
	ul     *uploads         // the clients' file copies (uploads.go)
	op     *Operator        // the operator's sessions, views, takeovers and human tabs (operator.go)
	dl     *downloadTracker // downloads per owner (downloads.go)
	taps   *Taps            // the timeline's, the passwords' and the jar's taps (taps.go)
	at     *attachments     // the virtual discovery and auto-attach, and Chrome's auto-attach (virtual.go, autoattach.go)
	launch *launchGate      // clients' commands wait while Hooks.Launched runs (launch.go)
	// features are the same four, as they registered for the core's hooks (features.go).
	features []feature
}

// New validates cfg and binds the listener; Serve runs the mux.
func New(cfg Config) (*Mux, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ln, port := cfg.Listener, cfg.Port
	if ln == nil && port == 0 {
		ln, err = net.Listen("tcp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("mux listen: %w", err)
		}
	}
	if ln != nil {
		port = ln.Addr().(*net.TCPAddr).Port
	}
	m := &Mux{
		nextID:     mrand.Int32N(1 << 30),
		cfg:        cfg,
		log:        cfg.Log.With().Str("port", strconv.Itoa(port)).Logger(), // the caller named the component (Config.Log)
		ln:         ln,
		door:       Door{Token: cfg.Token, Port: port},
		files:      newLocalFiles(cfg.Home),
		ownCh:      make(chan struct{}, 1),
		relaunched: make(chan string, 1),
		pending:    map[int32]*pending{},
		clients:    map[string]*client{},
		targets:    map[string]*target{},
		sessions:   map[string]*session{},
		fresh:      cfg.FreshLaunch,
		activity:   time.Now(),
	}
	addParts(m)
	m.refusedLog = m.log.Sample(&zerolog.BurstSampler{Burst: 10, Period: time.Minute})
	m.upgrader = websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferPool: &sync.Pool{}, // idle clients hold no write buffer
		// Origin is refused before the upgrade; the clients we serve send none.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	for id, tids := range cfg.Ownership {
		cl := m.clientLocked(id)
		for _, tid := range tids {
			t := &target{id: tid, owner: cl, line: tabLine{client: id, adopted: true}}
			m.targets[tid] = t
			m.order = append(m.order, t)
		}
	}
	if ln != nil {
		m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	}
	return m, nil
}

// Operator returns the operator's side of the mux: its listing of the clients' tabs, thumbnails, views
// and takeovers, human tabs and the whole cookie jar.
func (m *Mux) Operator() *Operator { return m.op }

// Taps returns what the mux notes on the side for the manager: the password texts typed into its tabs and
// the jar's change signals (the timeline's steps go to Hooks.Timeline).
func (m *Mux) Taps() *Taps { return m.taps }

// Addr returns the address the mux answers on, "127.0.0.1:PORT".
func (m *Mux) Addr() string { return "127.0.0.1:" + strconv.Itoa(m.door.Port) }

// Serve runs the mux until ctx ends, then closes every client, the upstream connection and every
// goroutine it started. It returns nil after a clean shutdown.
func (m *Mux) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvErr := make(chan error, 1) // one send, read after shutdown; none when the caller serves the mux (Port)
	if m.srv != nil {
		go func() { srvErr <- m.srv.Serve(m.ln) }()
	}

	m.mu.Lock()
	if m.cfg.Grace != Off { // with no grace period the first ownership rebuild closes their tabs
		for _, cl := range m.clients {
			m.startGraceLocked(cl) // adopted clients are disconnected until they come back
		}
	}
	m.mu.Unlock()

	m.wg.Add(3)
	go func() { defer m.wg.Done(); m.runUpstream(ctx) }()
	go func() { defer m.wg.Done(); m.runOwnershipHook(ctx) }()
	go func() { defer m.wg.Done(); m.taps.runTimelineHook(ctx) }()

	var err error
	select {
	case <-ctx.Done():
		if m.srv != nil {
			m.srv.Close()
			<-srvErr // http.ErrServerClosed
		}
	case err = <-srvErr:
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		} else if err != nil {
			err = fmt.Errorf("mux serve: %w", err)
		}
		cancel()
		m.srv.Close()
	}
	m.mu.Lock()
	m.closed = true
	for _, cl := range m.clients {
		if cl.grace != nil {
			cl.grace.Stop()
		}
		if cl.conn != nil {
			cl.conn.shutdown(websocket.CloseGoingAway, "mux shutting down", false)
		}
	}
	if m.up != nil {
		m.up.close()
	}
	for _, f := range m.features {
		f.closeLocked()
	}
	m.mu.Unlock()
	m.wg.Wait()
	return err
}

// ServeHTTP implements the mux's HTTP surface: authentication, discovery and the WebSocket upgrade. A
// caller that serves the mux on a listener of its own (Config.Port) hands it every request.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rt, ok := m.door.Route(w, r)
	if !ok {
		return
	}
	switch rt.Kind {
	case RouteVersion:
		m.serveVersion(w, r, rt)
	case RouteList:
		m.door.WriteList(w)
	default:
		id := rt.ClientID
		if id == "" {
			id = DiscoveryClientPrefix + randomHex(8)
		}
		m.serveClient(w, r, id)
	}
}

func (m *Mux) serveVersion(w http.ResponseWriter, r *http.Request, rt Route) {
	v := m.Version()
	if v == nil {
		http.Error(w, "browser not connected", http.StatusServiceUnavailable)
		return
	}
	m.door.WriteVersion(w, r, rt, v)
}

// Version returns a copy of the browser's version object as the mux last had it (what /json/version
// serves, without its webSocketDebuggerUrl, which names the browser itself), or nil before the first one.
func (m *Mux) Version() map[string]any {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.version) == 0 {
		return nil
	}
	v := make(map[string]any, len(m.version))
	for k, x := range m.version {
		if k != "webSocketDebuggerUrl" {
			v[k] = x
		}
	}
	return v
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (m *Mux) touchActivityLocked() { m.activity = time.Now() }
