// Package ui serves the web UI people use to watch and help the agents.
package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	stdlog "log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/untrusted"
	"vibebrowser/mux"
	"vibebrowser/mux/errdefs"
)

// Source is what the UI reads from the manager. The manager implements it; tests use a fake, so this
// package never imports the manager.
type Source interface {
	// Status is the manager's whole picture, as GET /v1/status prints it.
	Status(ctx context.Context) (api.Status, error)
	// Events are the manager's recent events, oldest first, as GET /v1/events prints them.
	Events() []api.Event
	// Browser is the running browser of the store with this slug ("web": the web browser). Its error
	// wraps ErrNoStore or ErrStopped.
	Browser(ctx context.Context, slug string) (Browser, error)
	// StartBrowser starts that browser as `vibe-browser store start` does (a person's decision: the
	// relaunch budget is forgiven). Its error is the manager's, written for a person.
	StartBrowser(ctx context.Context, slug string) error
	// AnswerHandoff records a person's answer to a pending handoff (api.HandoffDone or
	// api.HandoffCantHelp, with an optional note), as `vibe-browser handoff done` does.
	AnswerHandoff(ctx context.Context, id, status, note string) (api.Handoff, error)
	// Downloads are that browser's newest limit finished downloads, oldest first, as GET
	// /v1/downloads?store= lists them. Its error wraps ErrNoStore for an unknown slug.
	Downloads(ctx context.Context, slug string, limit int) ([]api.Download, error)
	// Timeline is a task's timeline with its entries after seq after (GET /v1/tasks/{id}/timeline). Its
	// error wraps ErrNoTask for an unknown task.
	Timeline(ctx context.Context, taskID string, after int64) (api.Timeline, error)
	// CallSteps are the steps of the task's call seq: those that happened while it ran (api.Entry.InCall).
	CallSteps(ctx context.Context, taskID string, seq int64) ([]api.Entry, error)
	// Shot is the JPEG of the task's shot entry seq. Its error wraps ErrNoShot when there is none (its
	// file may have been dropped by the size cap or the retention).
	Shot(ctx context.Context, taskID string, seq int64) ([]byte, error)
	// DownloadFile opens the finished download id for reading, with its record. Its error wraps
	// ErrNoDownload when there is none or its file is gone.
	DownloadFile(ctx context.Context, id int64) (*os.File, api.Download, error)
	// Cluster is the other hosts of this host's cluster (SPEC §19 "One pane"), nil on a single host: a store
	// placed on another host is shown by that host's UI, through the door (relay.go).
	Cluster() Cluster
	// Changed is closed at the manager's next change of its state (a write: a store, a task, a browser
	// started or stopped, a handoff, a download, a tab's owner); a caller takes a new one after each. The
	// store page reads Status and Downloads again only then. What changes in memory only (a tab's title,
	// a client's last activity) has no signal: the pages look at it every PollEvery.
	Changed() <-chan struct{}
}

// Errors of the Source, each of an errdefs class.
var (
	// ErrNoStore: no store has that slug.
	ErrNoStore = errdefs.NotFound("no such store")
	// ErrStopped: the browser is not running.
	ErrStopped = errdefs.Unavailable("the browser is not running")
	// ErrNoTask: the manager knows no task of that id (Timeline).
	ErrNoTask = errdefs.NotFound("no such task")
	// ErrNoShot: the task has no shot of that seq, or its file is gone (Shot).
	ErrNoShot = errdefs.NotFound("no such shot")
	// ErrNoDownload: no finished download has that id, or its file is gone (DownloadFile).
	ErrNoDownload = errdefs.NotFound("no such download")
)

// Browser is one running browser's mux as the pages use it (the operator API of package mux); the
// manager adapts *mux.Mux to it.
type Browser interface {
	Clients() []mux.ClientInfo
	Thumbnail(ctx context.Context, targetID string, maxWidth, quality int) ([]byte, error)
	// PageInfo is a page's current title and URL, asked of the browser (Clients' may be older).
	PageInfo(ctx context.Context, targetID string) (title, url string, err error)
	View(ctx context.Context, targetID string, opt mux.ViewOptions) (View, error)
	NewHumanTab(ctx context.Context, url string) (string, error)
	CloseHumanTab(targetID string) error
	// Viewers is the number of live views of its tabs (mux.Stats.Viewers).
	Viewers() int
}

// View is a live view of one tab (*mux.View).
type View interface {
	Next(ctx context.Context) (mux.Frame, error)
	Done() <-chan struct{}
	Err() error
	Mouse(ctx context.Context, e mux.MouseEvent) error
	Key(ctx context.Context, e mux.KeyEvent) error
	InsertText(ctx context.Context, text string) error
	Navigate(ctx context.Context, url string) error
	Back(ctx context.Context) error
	Forward(ctx context.Context) error
	Reload(ctx context.Context) error
	// Hold takes the tab over for holder (mux.ErrHeldByOther when another viewer has it); Release gives
	// it back; Holding reports whether this view holds it, HeldBy who holds the tab ("": nobody).
	Hold(holder string) error
	Release()
	Holding() bool
	HeldBy() string
	Close() error
}

// Config is what New needs. Zero durations take the defaults below.
type Config struct {
	Host   string // the host of VIBE_UI_ADDR: loopback names and IPs make a loopback UI
	Port   int    // the port actually bound (VIBE_UI_ADDR may say 0)
	Source Source
	Log    zerolog.Logger
	// AllowUser decides whether the local user uid at the other end of a connection may use the UI (SPEC
	// §11; peer.go reads the uid from the kernel): nil when it may, else why not, written for a person. Nil
	// serves every user.
	AllowUser func(uid int) error
	// Now is the clock of login codes and sessions; nil means time.Now. Tests move it.
	Now func() time.Time
	// PollEvery is how often a live page's stream looks at what has no change signal (500 ms): the
	// muxes' clients and tabs, ages, the overview's whole status; a store page reads the state again at
	// most that often, however often it changes. Heartbeat is how often an idle stream sends a comment
	// so proxies and the browser keep it open, and reads the state again whatever Changed said (15 s).
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
	formKey   [32]byte  // the key of the forms' tokens and the sessions' paths (formToken, sessionPrefix): new at each start, as the sessions are
	relay     *relay    // a store's routes, relayed to the store's host (relay.go)
	fromHosts *hostSide // other hosts' relays of their people's requests (fromhost.go)

	mu       sync.Mutex           // mu guards the fields below
	codes    map[string]time.Time // login code -> expiry
	sessions map[string]*session  // session id -> its session
	visitors visitors             // the notices of the people other hosts relay (fromhost.go)
}

// New builds the UI server; Serve or Handler puts it to work.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, pollEvery: cfg.PollEvery, heartbeat: cfg.Heartbeat,
		codes: map[string]time.Time{}, sessions: map[string]*session{}, visitors: visitors{},
		ownHosts: map[string]bool{}}
	_, _ = rand.Read(s.formKey[:]) // crypto/rand.Read never fails (it panics instead)
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
	s.relay, s.fromHosts = newRelay(s), newHostSide(s)
	s.routes = s.newRoutes()
	return s
}

// funcs are the templates' own functions: text shows what a page or an agent wrote (untrusted.HTML).
var funcs = template.FuncMap{"text": untrusted.HTML}

// parsePages makes one template set per page, each with the shared layout: a page defines "title",
// "main" and "script"; the layout places them.
func parsePages() map[string]*template.Template {
	pages := map[string]*template.Template{}
	for _, page := range []string{"overview", "message", "store", "tab", "task"} {
		files := []string{"templates/layout.html", "templates/" + page + ".html"}
		if page == "task" {
			files = append(files, "templates/steps.html") // the steps, which Export draws too
		}
		t := template.New("layout.html").Funcs(funcs)
		pages[page] = template.Must(t.ParseFS(templateFS, files...))
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
	routes := http.NewServeMux()
	routes.HandleFunc("GET /login", s.handleLogin)
	routes.HandleFunc("GET /{$}", s.handleOverview)
	routes.HandleFunc("GET /live/overview", s.handleOverviewLive)
	// A store's routes are served by the host that runs its browser (owned): here, or relayed there.
	routes.HandleFunc("GET /store/{slug}", s.relay.owned(s.handleStore))
	routes.HandleFunc("GET /live/store/{slug}", s.relay.owned(s.handleStoreLive))
	routes.HandleFunc("POST /store/{slug}/start", s.relay.owned(s.handleStart))
	routes.HandleFunc("POST /store/{slug}/tabs", s.relay.owned(s.handleNewTab))
	routes.HandleFunc("GET /store/{slug}/tab/{id}/thumb.jpg", ownPagesOnly(s.relay.owned(s.handleThumb)))
	routes.HandleFunc("GET /store/{slug}/tab/{id}", s.relay.owned(s.handleTab))
	routes.HandleFunc("GET /store/{slug}/tab/{id}/ws", s.relay.owned(s.handleTabSocket))
	routes.HandleFunc("POST /store/{slug}/tab/{id}/close", s.relay.owned(s.handleCloseTab))
	routes.HandleFunc("POST /handoffs/{id}/answer", s.handleAnswer)
	routes.HandleFunc("GET /task/{id}", s.handleTask)
	routes.HandleFunc("GET /task/{id}/entries", s.handleTaskEntries)
	routes.HandleFunc("GET /task/{id}/shot/{seq}", ownPagesOnly(s.handleShot))
	routes.HandleFunc("GET /task/{id}/download/{did}", ownPagesOnly(s.handleTaskDownload))
	routes.HandleFunc("GET /task/{id}/export", ownPagesOnly(s.handleTaskExport))
	routes.Handle("GET /assets/", s.assets)
	routes.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.message(w, r, http.StatusNotFound, "Not found",
			"There is no page at this address.", "Go to the overview to see every store, browser and task.", "./")
	})
	return routes
}

// Serve answers on ln until ctx ends, then closes it and every connection. Live streams end with ctx,
// so the shutdown does not wait for them. The connections other hosts' doors hand over (ServeHost) are
// served meanwhile too.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// net/http's own complaints become JSON lines of the daemon's log, like everything else it logs.
	errLog := stdlog.New(warnWriter{s.cfg.Log}, "", 0)
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }, ConnContext: peerContext, ErrorLog: errLog}
	hosts := &http.Server{Handler: s.fromHosts, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: hostIdle,
		BaseContext: func(net.Listener) context.Context { return ctx }, ConnContext: hostContext, ErrorLog: errLog}
	done, hostsDone := make(chan error, 1), make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	go func() { hostsDone <- hosts.Serve(s.fromHosts.ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-done:
	}
	shut, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = srv.Shutdown(shut)
	_ = hosts.Shutdown(shut)
	s.relay.conns.CloseIdleConnections()
	if err == nil {
		err = <-done
	}
	<-hostsDone
	if !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// NewLogin mints a login code: random, single use, valid for codeTTL.
func (s *Server) NewLogin() api.UILogin {
	l, _ := s.NewLoginTo("/")
	return l
}

// NewLoginTo mints a login code whose URL lands on next, a path of this UI (SafeNext's rule).
func (s *Server) NewLoginTo(next string) (api.UILogin, error) {
	if err := SafeNext(next); err != nil {
		return api.UILogin{}, err
	}
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
	u := s.URL() + "/login?code=" + code
	if next != "/" {
		u += "&next=" + url.QueryEscape(next)
	}
	return api.UILogin{URL: u, Code: code, ExpiresAt: now.Add(codeTTL)}, nil
}

// warnWriter logs each line written to it as a warning.
type warnWriter struct{ log zerolog.Logger }

func (w warnWriter) Write(p []byte) (int, error) {
	w.log.Warn().Msg(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
