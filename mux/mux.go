package mux

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"vibebrowser/mux/clientid"
)

// Mux is a CDP multiplexing proxy for one browser: many client WebSockets share one upstream browser
// connection, and each client sees and touches only its own targets. Create it with New, run it with Serve.
type Mux struct {
	cfg      Config
	log      zerolog.Logger
	ln       net.Listener
	port     string
	upgrader websocket.Upgrader
	srv      *http.Server
	ownCh    chan struct{} // capacity 1: one pending "ownership changed" is enough, the snapshot is taken later
	// relaunched carries the endpoint of a relaunched browser to the upstream loop (capacity 1, newest wins).
	relaunched chan string
	wg         sync.WaitGroup

	msgsIn, msgsOut, bytesIn, bytesOut atomic.Uint64

	mu sync.Mutex
	// mu guards the fields below: the routing tables, owned by whichever goroutine holds it. It is never
	// held across a network write; sends go through the non-blocking queues.
	closed   bool
	up       *upstream
	nextID   int32
	pending  map[int32]*pending
	clients  map[string]*client
	targets  map[string]*target
	order    []*target // targets in the order they appeared, for replays in Chrome's order
	sessions map[string]*session
	creating *createRec // the one Target.createTarget in flight; others wait in createQ
	createQ  []queuedCreate
	version  map[string]any // cached /json/version object
	tick     uint64         // logical clock for LRU
	activity time.Time
	fresh    bool // orphan cleanup still due (FreshLaunch, first connect)
	// While the upstream reader routes a message (batching), frames for clients are queued quietly and
	// their connections collected in kicked; the upstream reader writes them itself after unlocking (see
	// conn.writeInline). Only the upstream reader goroutine sets batching or touches kicked.
	batching bool
	kicked   []*conn
	// upQuiet is set while a client reader routes its message: it writes the upstream queue itself
	// right after (upstream.writeNow), so its push need not wake the upstream writer.
	upQuiet bool
	op      operatorState
	dl      downloadState
}

// New validates cfg and binds the listener; Serve runs the mux.
func New(cfg Config) (*Mux, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	ln := cfg.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", cfg.Addr)
		if err != nil {
			return nil, fmt.Errorf("mux listen: %w", err)
		}
	}
	_, port, err := net.SplitHostPort(ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("mux listen address: %w", err)
	}
	m := &Mux{
		cfg:        cfg,
		log:        cfg.Log.With().Str("port", port).Logger(), // the caller named the component (Config.Log)
		ln:         ln,
		port:       port,
		ownCh:      make(chan struct{}, 1),
		relaunched: make(chan string, 1),
		pending:    map[int32]*pending{},
		clients:    map[string]*client{},
		targets:    map[string]*target{},
		sessions:   map[string]*session{},
		fresh:      cfg.FreshLaunch,
		activity:   time.Now(),
	}
	m.upgrader = websocket.Upgrader{
		ReadBufferSize:  4096,
		WriteBufferPool: &sync.Pool{}, // idle clients hold no write buffer
		// Origin is refused before the upgrade; the clients we serve send none.
		CheckOrigin: func(*http.Request) bool { return true },
	}
	for id, tids := range cfg.Ownership {
		cl := m.clientLocked(id)
		for _, tid := range tids {
			t := &target{id: tid, owner: cl}
			m.targets[tid] = t
			m.order = append(m.order, t)
		}
	}
	m.srv = &http.Server{Handler: m, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	return m, nil
}

// Addr returns the address the mux listens on, "127.0.0.1:PORT".
func (m *Mux) Addr() string { return m.ln.Addr().String() }

// Serve runs the mux until ctx ends, then closes every client, the upstream connection and every
// goroutine it started. It returns nil after a clean shutdown.
func (m *Mux) Serve(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srvErr := make(chan error, 1) // one send, read after shutdown
	go func() { srvErr <- m.srv.Serve(m.ln) }()

	m.mu.Lock()
	if m.cfg.Grace != Off { // with no grace period the first ownership rebuild closes their tabs
		for _, cl := range m.clients {
			m.startGraceLocked(cl) // adopted clients are disconnected until they come back
		}
	}
	m.mu.Unlock()

	m.wg.Add(2)
	go func() { defer m.wg.Done(); m.runUpstream(ctx) }()
	go func() { defer m.wg.Done(); m.runOwnershipHook(ctx) }()

	var err error
	select {
	case <-ctx.Done():
		m.srv.Close()
		<-srvErr // http.ErrServerClosed
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
	m.mu.Unlock()
	m.wg.Wait()
	return err
}

// ServeHTTP implements the mux's HTTP surface: authentication, discovery and the WebSocket upgrade.
func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rest, ok := m.checkToken(r.URL.Path)
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if r.Header.Get("Origin") != "" || !m.hostOK(r.Host) {
		// Web pages (Origin) and DNS rebinding (foreign Host) must never reach a logged-in browser.
		http.Error(w, "forbidden", http.StatusForbidden)
		return
	}
	switch rest {
	case "/json/version", "/json/version/":
		m.serveVersion(w, r)
		return
	case "/json", "/json/", "/json/list", "/json/list/":
		// HTTP requests carry no client identity, so there is nothing a caller may see.
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.Write([]byte("[]\n"))
		return
	}
	if !websocket.IsWebSocketUpgrade(r) {
		http.NotFound(w, r)
		return
	}
	var id string
	if after, ok := strings.CutPrefix(rest, "/client-"); ok {
		if !clientid.Valid(after) {
			http.Error(w, "client id must match "+clientid.Form, http.StatusBadRequest)
			return
		}
		if after == HumanClient {
			http.Error(w, "client id \""+HumanClient+"\" is reserved for people using the vibe-browser UI", http.StatusForbidden)
			return
		}
		id = after
	} else {
		id = "anon-" + randomHex(8)
	}
	m.serveClient(w, r, id)
}

func (m *Mux) checkToken(path string) (rest string, ok bool) {
	p := strings.TrimPrefix(path, "/")
	seg, rest, _ := strings.Cut(p, "/")
	if subtle.ConstantTimeCompare([]byte(seg), []byte(m.cfg.Token)) != 1 {
		return "", false
	}
	if rest != "" || strings.HasSuffix(p, "/") {
		rest = "/" + rest
	}
	return rest, true
}

func (m *Mux) hostOK(host string) bool {
	return host == "127.0.0.1:"+m.port || host == "localhost:"+m.port
}

func (m *Mux) serveVersion(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	v := make(map[string]any, len(m.version)+1)
	for k, x := range m.version {
		v[k] = x
	}
	m.mu.Unlock()
	if len(v) == 0 {
		http.Error(w, "browser not connected", http.StatusServiceUnavailable)
		return
	}
	v["webSocketDebuggerUrl"] = "ws://" + r.Host + "/" + m.cfg.Token + "/devtools/browser/" + randomHex(8)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "   ")
	enc.Encode(v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func (m *Mux) touchActivityLocked() { m.activity = time.Now() }
