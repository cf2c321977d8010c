// Package fakeziniao is a fake Ziniao client for tests: it speaks the Ziniao local HTTP API and launches a real Chromium per startBrowser.
//
// Like the real client it checks company, username and password on every request, answers
// getBrowserList with its configured browsers, replaces an open session on startBrowser (the old
// environment's port dies), closes one on stopBrowser and shuts down on exit. A healthy environment runs
// headless Chromium with navigator.webdriver masked, standing in for Ziniao's instrumentation. Faults are
// injected per browser: stale launches (a port nothing listens on), environments without instrumentation
// (navigator.webdriver === true), error status codes and slow answers; startBrowser and stopBrowser calls
// are counted per browser.
package fakeziniao

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/chrome"
)

// Status codes the fake answers with.
const (
	StatusOK                  = "0"
	StatusWebDriverNotEnabled = "-10003"
	// StatusLoginFailed answers a request whose company, username or password is wrong.
	StatusLoginFailed = "-10001"
	// StatusBadRequest answers a malformed request: an unknown action, a missing field, an unknown browser.
	StatusBadRequest = "-1"
)

// Flags standing in for Ziniao's instrumentation: it masks navigator.webdriver; without it a page under
// automation reports true. (--enable-automation would do the same, but the launcher refuses it.)
const (
	flagMasked   = "--disable-blink-features=AutomationControlled"
	flagUnmasked = "--enable-blink-features=AutomationControlled"
)

// Browser is one configured store environment.
type Browser struct {
	ID    string // browserId, all digits (sent as a number, as the real client does)
	Oauth string // browserOauth
	Name  string // browserName
}

// Options configures a Server.
type Options struct {
	Company, Username, Password string
	Browsers                    []Browser
	Chrome                      string // Chromium binary; empty means chrome.Find("")
	Dir                         string // where profiles live; empty means a temp dir removed by Close
	Port                        int    // listen port on 127.0.0.1; zero picks a free one
	Log                         zerolog.Logger
}

// Fault is injected into one browser's answers. Counts are consumed one per startBrowser; a negative
// count means every call.
type Fault struct {
	StaleLaunches     int           // startBrowser answers "0" with a debugging port nothing listens on
	NoInstrumentation int           // startBrowser launches Chromium whose pages report navigator.webdriver === true
	StatusCode        string        // startBrowser answers this statusCode (e.g. "-10003") and launches nothing
	Delay             time.Duration // every action naming this browser waits this long before answering
}

// Calls counts the actions a browser received (counted on arrival, before any Delay).
type Calls struct {
	Start int // startBrowser
	Stop  int // stopBrowser
}

// Server is a running fake Ziniao client.
type Server struct {
	opts    Options
	bin     string
	dir     string
	tempDir bool
	ln      net.Listener
	srv     *http.Server
	serveWG sync.WaitGroup
	exitWG  sync.WaitGroup
	closeMu sync.Once
	exited  chan struct{} // closed once the exit action has taken the server down
	exitMu  sync.Once     // closes exited

	mu       sync.Mutex // mu guards the fields below
	faults   map[string]Fault
	calls    map[string]Calls
	sessions map[string]*session
	locks    map[string]*sync.Mutex // per browser: startBrowser/stopBrowser of one browser are serialised
	closed   bool
}

// session is one open environment.
type session struct {
	port     int
	userData string
	proc     *chrome.Process // nil for a stale launch
}

// New starts a fake Ziniao client listening on 127.0.0.1.
func New(o Options) (*Server, error) {
	bin, err := chrome.Find(o.Chrome)
	if err != nil {
		return nil, fmt.Errorf("fakeziniao: %w", err)
	}
	s := &Server{
		opts:     o,
		bin:      bin,
		dir:      o.Dir,
		faults:   map[string]Fault{},
		calls:    map[string]Calls{},
		sessions: map[string]*session{},
		locks:    map[string]*sync.Mutex{},
		exited:   make(chan struct{}),
	}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "fakeziniao-")
		if err != nil {
			return nil, fmt.Errorf("fakeziniao: %w", err)
		}
		s.dir, s.tempDir = d, true
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(o.Port)))
	if err != nil {
		s.removeDir()
		return nil, fmt.Errorf("fakeziniao: %w", err)
	}
	s.ln = ln
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ReadHeaderTimeout: 10 * time.Second}
	s.serveWG.Add(1)
	go func() {
		defer s.serveWG.Done()
		_ = s.srv.Serve(ln) // returns on Close
	}()
	return s, nil
}

// Exited is closed once an exit action has stopped the server and its environments.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// URL returns http://127.0.0.1:<port>.
func (s *Server) URL() string { return "http://" + s.ln.Addr().String() }

// Port returns the port the fake listens on (the client's --port).
func (s *Server) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// SetFault replaces the fault of the browser named by id or oauth.
func (s *Server) SetFault(browser string, f Fault) error {
	b, ok := s.lookup(browser)
	if !ok {
		return fmt.Errorf("fakeziniao: unknown browser %q", browser)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[b.ID] = f
	return nil
}

// Calls returns the actions counted for the browser named by id or oauth.
func (s *Server) Calls(browser string) Calls {
	b, _ := s.lookup(browser)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[b.ID]
}

// DebuggingPort returns the port of the browser's open session, or 0 when none is open.
func (s *Server) DebuggingPort(browser string) int {
	b, _ := s.lookup(browser)
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[b.ID]; ss != nil {
		return ss.port
	}
	return 0
}

// Close stops serving, stops every open environment and removes the temp dir it made.
func (s *Server) Close() error {
	var err error
	s.closeMu.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err = s.srv.Shutdown(ctx); err != nil {
			err = errors.Join(err, s.srv.Close()) // a slow answer still pending: cut it off
		}
		s.serveWG.Wait()
		s.exitWG.Wait()
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		if serr := s.stopAll(); err == nil {
			err = serr
		}
		s.removeDir()
	})
	return err
}

func (s *Server) removeDir() {
	if s.tempDir {
		_ = os.RemoveAll(s.dir)
	}
}

// stopAll stops every open environment.
func (s *Server) stopAll() error {
	var errs []error
	for _, b := range s.opts.Browsers {
		l := s.lock(b.ID)
		l.Lock()
		errs = append(errs, s.closeSession(b.ID))
		l.Unlock()
	}
	return errors.Join(errs...)
}

func (s *Server) lookup(browser string) (Browser, bool) {
	for _, b := range s.opts.Browsers {
		if browser != "" && (b.ID == browser || b.Oauth == browser) {
			return b, true
		}
	}
	return Browser{}, false
}

func (s *Server) lock(id string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.locks[id]
	if l == nil {
		l = &sync.Mutex{}
		s.locks[id] = l
	}
	return l
}

// request is the union of the fields the actions carry; presence matters, so the optional ones are raw.
type request map[string]json.RawMessage

func (r request) str(k string) string {
	var v string
	if raw, ok := r[k]; ok && json.Unmarshal(raw, &v) == nil {
		return v
	}
	return ""
}

// startFields are the fields startBrowser must carry besides the browser and the account (SPEC §7), with
// the values a WebDriver client sends.
var startFields = map[string]string{
	"isHeadless":              "0",
	"isWaitPluginUpdate":      "0",
	"isWebDriverReadOnlyMode": "0",
	"cookieTypeLoad":          "0",
	"cookieTypeSave":          "0",
	"runMode":                 `"1"`,
	"isLoadUserPlugin":        "false",
	"pluginIdType":            "1",
	"privacyMode":             "0",
	"notPromptForDownload":    "1",
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	var req request
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req); err != nil {
		reply(w, StatusBadRequest, "bad JSON: "+err.Error(), nil)
		return
	}
	if req.str("company") != s.opts.Company || req.str("username") != s.opts.Username || req.str("password") != s.opts.Password {
		reply(w, StatusLoginFailed, "login failed: company, username or password is wrong", nil)
		return
	}
	action := req.str("action")
	var b Browser
	switch action {
	case "startBrowser", "stopBrowser":
		var ok bool
		if b, ok = s.browserOf(req); !ok {
			reply(w, StatusBadRequest, "unknown browser (browserOauth or browserId)", nil)
			return
		}
		s.count(b.ID, func(c *Calls) {
			if action == "startBrowser" {
				c.Start++
			} else {
				c.Stop++
			}
		})
		if !s.delay(r.Context(), b.ID) {
			return // the caller hung up
		}
	}
	switch action {
	case "getBrowserList":
		list := make([]map[string]any, 0, len(s.opts.Browsers))
		for _, b := range s.opts.Browsers {
			id, _ := strconv.ParseInt(b.ID, 10, 64)
			list = append(list, map[string]any{"browserOauth": b.Oauth, "browserId": id, "browserName": b.Name})
		}
		reply(w, StatusOK, "", map[string]any{"browserList": list})
	case "startBrowser":
		for k, want := range startFields {
			if got := string(req[k]); got != want {
				reply(w, StatusBadRequest, fmt.Sprintf("field %s = %s; want %s", k, got, want), nil)
				return
			}
		}
		s.startBrowser(r.Context(), w, b)
	case "stopBrowser":
		l := s.lock(b.ID)
		l.Lock()
		err := s.closeSession(b.ID)
		l.Unlock()
		if err != nil {
			reply(w, StatusBadRequest, err.Error(), nil)
			return
		}
		reply(w, StatusOK, "", nil)
	case "exit":
		reply(w, StatusOK, "", nil)
		// Like the real client, exit takes every environment with it and stops answering.
		s.exitWG.Add(1)
		go func() {
			defer s.exitWG.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = s.srv.Shutdown(ctx)
			_ = s.stopAll()
			s.exitMu.Do(func() { close(s.exited) })
		}()
	default:
		reply(w, StatusBadRequest, fmt.Sprintf("unknown action %q", action), nil)
	}
}

// browserOf resolves browserOauth or browserId (a string of digits or a number).
func (s *Server) browserOf(req request) (Browser, bool) {
	if o := req.str("browserOauth"); o != "" {
		b, ok := s.lookup(o)
		return b, ok && b.Oauth == o
	}
	raw, ok := req["browserId"]
	if !ok {
		return Browser{}, false
	}
	var id json.Number
	if json.Unmarshal(raw, &id) != nil {
		return Browser{}, false
	}
	b, ok := s.lookup(id.String())
	return b, ok && b.ID == id.String()
}

// delay waits out the browser's Delay fault; false when the request's context ended first.
func (s *Server) delay(ctx context.Context, id string) bool {
	s.mu.Lock()
	d := s.faults[id].Delay
	s.mu.Unlock()
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Server) count(id string, f func(*Calls)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls[id]
	f(&c)
	s.calls[id] = c
}

// take consumes one unit of the browser's fault for a startBrowser and says what this launch does.
func (s *Server) take(id string) (status string, stale, unmasked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.faults[id]
	if f.StatusCode != "" {
		return f.StatusCode, false, false
	}
	if f.StaleLaunches != 0 {
		stale = true
		if f.StaleLaunches > 0 {
			f.StaleLaunches--
		}
	} else if f.NoInstrumentation != 0 {
		unmasked = true
		if f.NoInstrumentation > 0 {
			f.NoInstrumentation--
		}
	}
	s.faults[id] = f
	return StatusOK, stale, unmasked
}

func (s *Server) startBrowser(ctx context.Context, w http.ResponseWriter, b Browser) {
	status, stale, unmasked := s.take(b.ID)
	if status != StatusOK {
		msg := "startBrowser refused"
		if status == StatusWebDriverNotEnabled {
			msg = "WebDriver permission is not enabled for this account"
		}
		reply(w, status, msg, nil)
		return
	}
	l := s.lock(b.ID)
	l.Lock()
	defer l.Unlock()
	// One session per profile: a new start replaces the open one, whose port dies.
	if err := s.closeSession(b.ID); err != nil {
		reply(w, StatusBadRequest, err.Error(), nil)
		return
	}
	userData := filepath.Join(s.dir, "profiles", b.ID)
	if stale {
		port, err := DeadPort()
		if err != nil {
			reply(w, StatusBadRequest, err.Error(), nil)
			return
		}
		s.setSession(b.ID, &session{port: port, userData: userData})
		reply(w, StatusOK, "", map[string]any{"debuggingPort": port, "userData": userData})
		return
	}
	flag := flagMasked
	if unmasked {
		flag = flagUnmasked
	}
	p, err := chrome.Launch(ctx, chrome.Options{
		Binary:     s.bin,
		ProfileDir: userData,
		Headless:   true,
		NoSandbox:  os.Geteuid() == 0,
		Transport:  chrome.TransportPort, // a Ziniao environment is reached on its debugging port
		ExtraArgs:  []string{flag},
		Attempts:   1,
		Log:        s.opts.Log.With().Str("component", "fakeziniao").Str("browser", b.ID).Logger(),
	})
	if err != nil {
		reply(w, StatusBadRequest, "launch: "+err.Error(), nil)
		return
	}
	port, err := portOf(p.HTTPEndpoint())
	if err != nil {
		_ = p.Stop(context.Background())
		reply(w, StatusBadRequest, err.Error(), nil)
		return
	}
	if !s.setSession(b.ID, &session{port: port, userData: userData, proc: p}) {
		_ = p.Stop(context.Background())
		reply(w, StatusBadRequest, "shutting down", nil)
		return
	}
	reply(w, StatusOK, "", map[string]any{"debuggingPort": port, "userData": userData})
}

// setSession records an open session; false when the server has closed (the caller stops it).
func (s *Server) setSession(id string, ss *session) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.sessions[id] = ss
	return true
}

// closeSession stops the browser's open session, if any. The caller holds the browser's lock.
func (s *Server) closeSession(id string) error {
	s.mu.Lock()
	ss := s.sessions[id]
	delete(s.sessions, id)
	s.mu.Unlock()
	if ss == nil || ss.proc == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := ss.proc.Stop(ctx); err != nil {
		return fmt.Errorf("stop browser %s: %w", id, err)
	}
	return nil
}

// DeadPort returns a port nothing listens on: bound, then released.
func DeadPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	return port, ln.Close()
}

// DeadPortFor is DeadPort for a test, which a failure ends: a client port where no Ziniao client runs.
func DeadPortFor(tb testing.TB) int {
	tb.Helper()
	port, err := DeadPort()
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

func portOf(endpoint string) (int, error) {
	_, p, err := net.SplitHostPort(endpoint[len("http://"):])
	if err != nil {
		return 0, fmt.Errorf("endpoint %q: %w", endpoint, err)
	}
	return strconv.Atoi(p)
}

// reply writes a Ziniao answer: statusCode as a string, err as the message, plus extra fields.
func reply(w http.ResponseWriter, status, msg string, extra map[string]any) {
	body := map[string]any{"statusCode": status}
	if msg != "" {
		body["err"] = msg
	}
	for k, v := range extra {
		body[k] = v
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}
