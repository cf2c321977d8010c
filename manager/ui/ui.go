// Package ui serves the web UI people use to watch and help the agents.
package ui

import (
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	stdlog "log"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
)

// Source is what the UI reads from the manager. The manager implements it; tests use a fake, so this
// package never imports the manager.
type Source interface {
	// Status is the manager's whole picture, as GET /v1/status prints it.
	Status(ctx context.Context) (api.Status, error)
	// Events are the manager's recent events, oldest first, as GET /v1/events prints them.
	Events() []api.Event
}

// Config is what New needs. Zero durations take the defaults below.
type Config struct {
	Host   string // the host of VIBE_UI_ADDR: loopback names and IPs make a loopback UI
	Port   int    // the port actually bound (VIBE_UI_ADDR may say 0)
	Source Source
	Log    zerolog.Logger
	// Now is the clock of login codes and sessions; nil means time.Now. Tests move it.
	Now func() time.Time
	// PollEvery is how often a live page's stream looks at the source (500 ms); Heartbeat is how often an
	// idle stream sends a comment so proxies and the browser keep it open (15 s).
	PollEvery, Heartbeat time.Duration
}

// Lifetimes of SPEC §11.
const (
	codeTTL     = 60 * time.Second
	sessionIdle = 12 * time.Hour
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Server is the UI's HTTP side: its access rules, its pages and their live streams.
type Server struct {
	cfg       Config
	loopback  bool
	urlHost   string          // host:port in the login URL
	ownHosts  map[string]bool // Host headers that name this UI (DNS rebinding defence)
	pages     map[string]*template.Template
	assets    http.Handler
	routes    http.Handler
	pollEvery time.Duration
	heartbeat time.Duration

	mu       sync.Mutex           // mu guards the fields below
	codes    map[string]time.Time // login code -> expiry
	sessions map[string]time.Time // session id -> last use
}

// New builds the UI server; Serve or Handler puts it to work.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, pollEvery: cfg.PollEvery, heartbeat: cfg.Heartbeat,
		codes: map[string]time.Time{}, sessions: map[string]time.Time{}, ownHosts: map[string]bool{}}
	if s.pollEvery == 0 {
		s.pollEvery = 500 * time.Millisecond
	}
	if s.heartbeat == 0 {
		s.heartbeat = 15 * time.Second
	}
	port := strconv.Itoa(cfg.Port)
	host := strings.ToLower(cfg.Host)
	ip := net.ParseIP(host)
	s.loopback = host == "localhost" || ip != nil && ip.IsLoopback()
	switch {
	case s.loopback && ip != nil && ip.To4() == nil: // ::1
		s.urlHost = net.JoinHostPort(host, port)
		s.ownHosts[s.urlHost] = true
		s.ownHosts["localhost:"+port] = true
	case s.loopback:
		s.urlHost = "127.0.0.1:" + port
		s.ownHosts[s.urlHost] = true
		s.ownHosts["localhost:"+port] = true
	default:
		s.urlHost = net.JoinHostPort(host, port)
		s.ownHosts[s.urlHost] = true
	}
	s.pages = parsePages()
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err) // the embedded tree is part of the binary: a broken one is a build bug
	}
	s.assets = http.StripPrefix("/assets/", http.FileServerFS(sub))
	s.routes = s.newRoutes()
	return s
}

// parsePages makes one template set per page, each with the shared layout: a page defines "title",
// "main" and "script"; the layout places them.
func parsePages() map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, page := range []string{"overview", "message"} {
		t := template.New("layout.html")
		pages[page] = template.Must(t.ParseFS(templateFS, "templates/layout.html", "templates/"+page+".html"))
	}
	return pages
}

// URL is the UI's base address, as the login URL names it.
func (s *Server) URL() string { return "http://" + s.urlHost }

// Handler is the whole UI behind its access rules.
func (s *Server) Handler() http.Handler { return s.guard(s.routes) }

// newRoutes is the UI's route table. A page is a GET route rendering its template (parsePages) and, when
// it is live, one stream under /live/ of its own; the store and tab pages join the same way.
func (s *Server) newRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", s.handleLogin)
	mux.HandleFunc("GET /{$}", s.handleOverview)
	mux.HandleFunc("GET /live/overview", s.handleOverviewLive)
	mux.Handle("GET /assets/", s.assets)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.message(w, r, http.StatusNotFound, "Not found",
			"There is no page at "+r.URL.Path+".", "Go to the overview to see every store, browser and task.", "/")
	})
	return mux
}

// Serve answers on ln until ctx ends, then closes it and every connection. Live streams end with ctx,
// so the shutdown does not wait for them.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx },
		// net/http's own complaints become JSON lines of the daemon's log, like everything else it logs.
		ErrorLog: stdlog.New(warnWriter{s.cfg.Log}, "", 0)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-done:
		return err
	}
	shut, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// NewLogin mints a login code: random, single use, valid for codeTTL.
func (s *Server) NewLogin() api.UILogin {
	code := randomHex()
	now := s.cfg.Now()
	s.mu.Lock()
	for c, exp := range s.codes {
		if !now.Before(exp) {
			delete(s.codes, c)
		}
	}
	s.codes[code] = now.Add(codeTTL)
	s.mu.Unlock()
	return api.UILogin{URL: s.URL() + "/login?code=" + code, Code: code, ExpiresAt: now.Add(codeTTL)}
}

// warnWriter logs each line written to it as a warning.
type warnWriter struct{ log zerolog.Logger }

func (w warnWriter) Write(p []byte) (int, error) {
	w.log.Warn().Msg(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
