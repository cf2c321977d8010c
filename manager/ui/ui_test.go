package ui

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
)

// fakeSource is a manager picture the test changes at will.
type fakeSource struct {
	mu     sync.Mutex // mu guards the fields below
	status api.Status
	err    error
	events []api.Event
	// browsers by slug; a slug with no entry is stopped, one of no store is in noStore.
	browsers map[string]*fakeBrowser
	noStore  map[string]bool
	startErr error
	started  []string
	// answers are AnswerHandoff's calls, "id status note"; answerErr is what they return.
	answers   []string
	answerErr error
	// downloads by slug, oldest first
	downloads map[string][]api.Download
	// timelines by task id; shots by task id and seq; files are the finished downloads DownloadFile opens,
	// by id (their Path a file of the test's).
	timelines map[string]api.Timeline
	shots     map[string]map[int64][]byte
	files     map[int64]api.Download
	// changed is the channel of Changed, closed by wroteLocked; reads counts Status calls.
	changed chan struct{}
	reads   int
	// cluster is what Cluster returns: nil for a single host.
	cluster Cluster
}

func (f *fakeSource) Cluster() Cluster { return f.cluster }

func (f *fakeSource) Status(context.Context) (api.Status, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return f.status, f.err
}

func (f *fakeSource) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

// wroteLocked is a write of the manager's state: it closes the channel of Changed. The caller holds mu.
func (f *fakeSource) wroteLocked() {
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
}

// statusReads is how many times Status was read.
func (f *fakeSource) statusReads() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *fakeSource) Events() []api.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]api.Event{}, f.events...)
}

func (f *fakeSource) Browser(_ context.Context, slug string) (Browser, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noStore[slug] {
		return nil, fmt.Errorf("%w: %q", ErrNoStore, slug)
	}
	if b := f.browsers[slug]; b != nil {
		return b, nil
	}
	return nil, fmt.Errorf("store %s: %w", slug, ErrStopped)
}

func (f *fakeSource) StartBrowser(_ context.Context, slug string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.started = append(f.started, slug)
	return f.startErr
}

func (f *fakeSource) AnswerHandoff(_ context.Context, id, status, note string) (api.Handoff, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers = append(f.answers, id+" "+status+" "+note)
	return api.Handoff{ID: id, Status: status, Note: note}, f.answerErr
}

func (f *fakeSource) Downloads(_ context.Context, slug string, limit int) ([]api.Download, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noStore[slug] {
		return nil, fmt.Errorf("%w: %q", ErrNoStore, slug)
	}
	ds := f.downloads[slug]
	return append([]api.Download{}, ds[max(0, len(ds)-limit):]...), nil
}

func (f *fakeSource) Timeline(_ context.Context, taskID string, after int64) (api.Timeline, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tl, ok := f.timelines[taskID]
	if !ok {
		return api.Timeline{}, fmt.Errorf("task %q: %w", taskID, ErrNoTask)
	}
	var entries []api.Entry
	for _, e := range tl.Entries {
		if e.Seq > after {
			entries = append(entries, e)
		}
	}
	tl.Entries = entries
	return tl, nil
}

func (f *fakeSource) CallSteps(_ context.Context, taskID string, seq int64) ([]api.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var steps []api.Entry
	for _, e := range f.timelines[taskID].Entries {
		if e.InCall == seq {
			steps = append(steps, e)
		}
	}
	return steps, nil
}

func (f *fakeSource) Shot(_ context.Context, taskID string, seq int64) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.shots[taskID][seq]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("shot %d of task %q: %w", seq, taskID, ErrNoShot)
}

func (f *fakeSource) DownloadFile(_ context.Context, id int64) (*os.File, api.Download, error) {
	f.mu.Lock()
	d, ok := f.files[id]
	f.mu.Unlock()
	if !ok {
		return nil, api.Download{}, fmt.Errorf("download %d: %w", id, ErrNoDownload)
	}
	file, err := os.Open(d.Path)
	if err != nil {
		return nil, api.Download{}, fmt.Errorf("download %d: %w: %v", id, ErrNoDownload, err)
	}
	return file, d, nil
}

// setTimeline changes a task's timeline.
func (f *fakeSource) setTimeline(tl api.Timeline) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.timelines == nil {
		f.timelines = map[string]api.Timeline{}
	}
	f.timelines[tl.Task.ID] = tl
}

// set changes the manager's status, as a write of its state does (Changed is closed).
func (f *fakeSource) set(fn func(*api.Status)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.status)
	f.wroteLocked()
}

// clock is a settable time for codes and sessions.
type clock struct {
	mu  sync.Mutex // mu guards now
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// uiUnderTest is a UI on an httptest server whose Host is the UI's own loopback address.
type uiUnderTest struct {
	srv   *Server
	hs    *httptest.Server
	src   *fakeSource
	clock *clock
	host  string // 127.0.0.1:<port> of hs

	mu       sync.Mutex        // mu guards the field below
	prefixes map[string]string // a login's cookie ("name=value") -> its session's path, /s/<key>
}

func startUI(t *testing.T, src *fakeSource) *uiUnderTest {
	t.Helper()
	return startUIWith(t, src, 10*time.Millisecond, 50*time.Millisecond)
}

// startUIWith is startUI with the streams' PollEvery and Heartbeat.
func startUIWith(t *testing.T, src *fakeSource, pollEvery, heartbeat time.Duration) *uiUnderTest {
	t.Helper()
	if src == nil {
		src = &fakeSource{status: api.Status{Version: "v-test", Home: "/home/me/.vibe-seller",
			Browsers: []api.Browser{{Key: api.WebKey, Slug: api.WebKey, Status: api.StatusStopped}}}}
	}
	c := &clock{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	u := &uiUnderTest{src: src, clock: c, prefixes: map[string]string{}}
	hs := httptest.NewUnstartedServer(nil)
	port := hs.Listener.Addr().(*net.TCPAddr).Port
	u.srv = New(Config{Host: "127.0.0.1", Port: port, Source: src, Log: zerolog.Nop(), Now: c.Now,
		PollEvery: pollEvery, Heartbeat: heartbeat})
	hs.Config.Handler = u.srv.Handler()
	hs.Start()
	t.Cleanup(hs.Close)
	u.hs, u.host = hs, hs.Listener.Addr().String()
	return u
}

// do sends one request without following redirects or keeping the connection. Three keys of hdr are not
// headers: "Host" is the request's Host, "Form" its body, an urlencoded form; and a path is under the
// session's own path (/s/<key>) when hdr's Cookie is a login's, as a browser of that login sends it, unless
// "Unscoped" is set (a cookie taken elsewhere).
func (u *uiUnderTest) do(t *testing.T, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	var form io.Reader
	if f, ok := hdr["Form"]; ok {
		form = strings.NewReader(f)
	}
	if _, raw := hdr["Unscoped"]; !raw {
		path = u.scoped(hdr["Cookie"], path)
	}
	req, err := http.NewRequest(method, u.hs.URL+path, form)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		switch k {
		case "Host":
			req.Host = v
		case "Form":
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		case "Unscoped":
		default:
			req.Header.Set(k, v)
		}
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// login spends a fresh code and returns the session cookie header value; the session's path is kept for
// scoped.
func (u *uiUnderTest) login(t *testing.T) string {
	t.Helper()
	l := u.srv.NewLogin()
	resp := u.do(t, "GET", "/login?code="+l.Code, nil)
	body(t, resp)
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			cookie := c.Name + "=" + c.Value
			u.mu.Lock()
			u.prefixes[cookie] = c.Path
			u.mu.Unlock()
			return cookie
		}
	}
	t.Fatalf("login with a fresh code set no %s cookie (status %d)", sessionCookie, resp.StatusCode)
	return ""
}

// scoped is path under the session path of cookie (a login's), as that login's pages name it; path as it
// is for another cookie, and for /login and /assets/, which live outside every session.
func (u *uiUnderTest) scoped(cookie, path string) string {
	u.mu.Lock()
	prefix := u.prefixes[cookie]
	u.mu.Unlock()
	if prefix == "" || strings.HasPrefix(path, "/login") || strings.HasPrefix(path, "/assets/") {
		return path
	}
	return prefix + path
}

// token is the form token of the session cookie (a "name=value" header value), as the pages render it.
func (u *uiUnderTest) token(t *testing.T, cookie string) string {
	t.Helper()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Cookie", cookie)
	tok := u.srv.formToken(req)
	if tok == "" {
		t.Fatalf("no form token for the cookie %q", cookie)
	}
	return tok
}

func wantSecurityHeaders(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	for k, v := range securityHeaders {
		if got := resp.Header.Get(k); got != v {
			t.Errorf("%s: header %s = %q; want %q", what, k, got, v)
		}
	}
	if want := "default-src 'self'; img-src 'self' data: blob:; frame-ancestors 'none'"; resp.Header.Get("Content-Security-Policy") != want {
		t.Errorf("%s: CSP %q; want %q", what, resp.Header.Get("Content-Security-Policy"), want)
	}
}

func TestLoginURLNamesTheUI(t *testing.T) {
	u := startUI(t, nil)
	l := u.srv.NewLogin()
	want := "http://" + u.host + "/login?code=" + l.Code
	if l.URL != want || len(l.Code) != 32 || !l.ExpiresAt.Equal(u.clock.Now().Add(time.Minute)) {
		t.Errorf("NewLogin() = %+v; want URL %q, a 128-bit hex code, expiry in 60s", l, want)
	}
	if other := u.srv.NewLogin(); other.Code == l.Code {
		t.Errorf("two logins share the code %q", l.Code)
	}
}

func TestLoginCodeIsSingleUseAndExpires(t *testing.T) {
	u := startUI(t, nil)
	l := u.srv.NewLogin()
	resp := u.do(t, "GET", "/login?code="+l.Code, map[string]string{"Accept": "text/html"})
	body(t, resp)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			session = c
		}
	}
	if session == nil || !session.HttpOnly || session.SameSite != http.SameSiteStrictMode || len(session.Value) != 32 ||
		!regexp.MustCompile(`^/s/[0-9a-f]{32}$`).MatchString(session.Path) {
		t.Fatalf("session cookie %+v; want HttpOnly, SameSite=Strict, 128 random bits, scoped to the session's /s/<128 bits>", session)
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != session.Path+"/" {
		t.Fatalf("first use: %d to %q; want 303 to the session's own overview, %s/", resp.StatusCode, loc, session.Path)
	}
	wantSecurityHeaders(t, "login", resp)

	resp = u.do(t, "GET", "/login?code="+l.Code, map[string]string{"Accept": "text/html"})
	if b := body(t, resp); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(b, "used or expired") ||
		!strings.Contains(b, "vibe-browser ui") {
		t.Errorf("reused code: %d %q; want 401 saying it is used or expired and to run vibe-browser ui", resp.StatusCode, b)
	}
	wantSecurityHeaders(t, "reused code", resp)

	late := u.srv.NewLogin()
	u.clock.add(61 * time.Second)
	resp = u.do(t, "GET", "/login?code="+late.Code, map[string]string{"Accept": "text/html"})
	if b := body(t, resp); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(b, "used or expired") {
		t.Errorf("expired code: %d %q; want 401 used or expired", resp.StatusCode, b)
	}
	resp = u.do(t, "GET", "/login?code=", nil)
	if body(t, resp); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("empty code: %d; want 401", resp.StatusCode)
	}
}

func TestSessionIdlesOut(t *testing.T) {
	u := startUI(t, nil)
	cookie := u.login(t)
	u.clock.add(11 * time.Hour)
	if resp := u.do(t, "GET", "/", map[string]string{"Cookie": cookie}); body(t, resp) == "" || resp.StatusCode != 200 {
		t.Fatalf("after 11 h: %d; want 200", resp.StatusCode)
	}
	u.clock.add(11 * time.Hour) // 11 h after the last use: still valid, the use renewed it
	if resp := u.do(t, "GET", "/", map[string]string{"Cookie": cookie}); body(t, resp) == "" || resp.StatusCode != 200 {
		t.Fatalf("11 h after the last use: %d; want 200", resp.StatusCode)
	}
	u.clock.add(12 * time.Hour)
	if resp := u.do(t, "GET", "/", map[string]string{"Cookie": cookie}); body(t, resp) == "" || resp.StatusCode != 401 {
		t.Errorf("12 h idle: %d; want 401", resp.StatusCode)
	}
}

func TestAccessRules(t *testing.T) {
	u := startUI(t, nil)
	cookie := u.login(t)
	own := "http://" + u.host
	port := u.host[strings.LastIndex(u.host, ":")+1:]
	token := formTokenField + "=" + u.token(t, cookie)
	other := formTokenField + "=" + u.token(t, u.login(t)) // another session's
	tests := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
		status int
		text   string // a fragment the body must contain
	}{
		{"page without cookie", "GET", "/", map[string]string{"Accept": "text/html"}, 401, "vibe-browser ui"},
		{"page with a wrong cookie", "GET", "/", map[string]string{"Accept": "text/html", "Cookie": sessionCookie + "=00"}, 401, "vibe-browser ui --open"},
		// The binary's own files, the same for everyone: a refusal's page reads well too.
		{"asset without cookie", "GET", "/assets/ui.css", nil, 200, "--accent"},
		{"stream without cookie", "GET", "/live/overview", map[string]string{"Accept": "text/event-stream"}, 401, "unauthorized"},
		{"page with cookie", "GET", "/", map[string]string{"Cookie": cookie}, 200, "Stores and the web browser"},
		{"localhost is our host too", "GET", "/", map[string]string{"Cookie": cookie, "Host": "localhost:" + port}, 200, "Tasks"},
		{"asset with cookie", "GET", "/assets/live.js", map[string]string{"Cookie": cookie}, 200, "EventSource"},
		{"foreign Host", "GET", "/", map[string]string{"Cookie": cookie, "Host": "evil.example:" + port}, 403, "Host"},
		{"foreign Host on login", "GET", "/login?code=x", map[string]string{"Host": "evil.example"}, 403, "Host"},
		{"our host, other port", "GET", "/", map[string]string{"Cookie": cookie, "Host": "127.0.0.1:1"}, 403, "Host"},
		{"POST from a foreign Origin", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "http://evil.example"}, 403, "evil.example"},
		{"POST without an Origin", "POST", "/", map[string]string{"Cookie": cookie}, 403, "not from this UI"},
		{"POST from our Origin passes to the routes", "POST", "/", map[string]string{"Cookie": cookie, "Origin": own}, 404, "Not found"},
		{"DELETE from a foreign Origin", "DELETE", "/x", map[string]string{"Cookie": cookie, "Origin": "null"}, 403, "forbidden"},
		// The pages' own plain forms: Origin null (no-referrer), and the browser's word that they are ours.
		{"a form of our own page", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null",
			"Sec-Fetch-Site": "same-origin"}, 404, "Not found"},
		{"a form of another port of this host", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null",
			"Sec-Fetch-Site": "same-site"}, 403, "same-site"},
		{"a form of another site with our Origin", "POST", "/", map[string]string{"Cookie": cookie, "Origin": own,
			"Sec-Fetch-Site": "cross-site"}, 403, "forbidden"},
		{"a POST typed into the address bar", "POST", "/", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "none"}, 403, "forbidden"},
		{"a form of our page over plain HTTP elsewhere", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null"}, 403, "SSH tunnel"},
		// Over plain HTTP to a non-loopback address browsers send no Fetch Metadata: the form's token of the
		// viewer's session is what vouches for a POST that says nothing else, and only for that.
		{"a form with our token over plain HTTP elsewhere", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null",
			"Form": "note=hi&" + token}, 404, "Not found"},
		{"a POST without an Origin with our token", "POST", "/", map[string]string{"Cookie": cookie, "Form": token}, 404, "Not found"},
		{"a form with a wrong token", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null",
			"Form": formTokenField + "=" + strings.Repeat("0", 64)}, 403, "Reload the page"},
		{"a form without a token", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null", "Form": "note=hi"}, 403, "SSH tunnel"},
		{"a form with another session's token", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null",
			"Form": other}, 403, "SSH tunnel"},
		{"a form with a token but no cookie", "POST", "/", map[string]string{"Origin": "null", "Form": token}, 403, "forbidden"},
		{"our token in the URL, not the form", "POST", "/?" + token, map[string]string{"Cookie": cookie, "Origin": "null"}, 403, "SSH tunnel"},
		{"our token from another port of this host", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null",
			"Sec-Fetch-Site": "same-site", "Form": token}, 403, "same-site"},
		{"our token from another site", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null",
			"Sec-Fetch-Site": "cross-site", "Form": token}, 403, "cross-site"},
		{"our token with a foreign Origin", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "http://evil.example",
			"Form": token}, 403, "evil.example"},
		{"our token on a DELETE", "DELETE", "/x", map[string]string{"Cookie": cookie, "Origin": "null", "Form": token}, 403, "forbidden"},
		{"a form too large to read for its token", "POST", "/", map[string]string{"Cookie": cookie, "Origin": "null",
			"Form": "note=" + strings.Repeat("x", maxFormBytes) + "&" + token}, 403, "forbidden"},
		{"WebSocket from another site", "GET", "/live/overview", map[string]string{"Cookie": cookie, "Upgrade": "websocket",
			"Connection": "Upgrade", "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}, 403, "evil.example"},
		{"WebSocket from a foreign Origin", "GET", "/live/overview", map[string]string{"Cookie": cookie, "Upgrade": "websocket",
			"Connection": "Upgrade", "Origin": "http://evil.example"}, 403, "evil.example"},
		{"WebSocket without an Origin", "GET", "/live/overview", map[string]string{"Cookie": cookie, "Upgrade": "websocket",
			"Connection": "Upgrade"}, 403, "forbidden"},
		{"WebSocket with Origin null and our token", "GET", "/live/overview", map[string]string{"Cookie": cookie, "Upgrade": "websocket",
			"Connection": "Upgrade", "Origin": "null", "Form": token}, 403, "forbidden"},
		{"SSE from a foreign Origin", "GET", "/live/overview", map[string]string{"Cookie": cookie,
			"Accept": "text/event-stream", "Origin": "http://evil.example"}, 403, "evil.example"},
		{"unknown page", "GET", "/store/acme", map[string]string{"Cookie": cookie, "Accept": "text/html"}, 404, "overview"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := u.do(t, tt.method, tt.path, tt.hdr)
			b := body(t, resp)
			if resp.StatusCode != tt.status || !strings.Contains(b, tt.text) {
				t.Errorf("%s %s = %d %q; want %d containing %q", tt.method, tt.path, resp.StatusCode, b, tt.status, tt.text)
			}
			wantSecurityHeaders(t, tt.name, resp)
		})
	}
	// Pages are never cached: they carry the manager's state.
	resp := u.do(t, "GET", "/", map[string]string{"Cookie": cookie})
	body(t, resp)
	if cc := resp.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("overview Cache-Control %q; want no-store", cc)
	}
}

// readEvent reads the next SSE message of kind event from r, skipping heartbeats; it returns the data,
// its lines joined as EventSource joins them.
func readEvent(t *testing.T, r *bufio.Reader, event string) string {
	t.Helper()
	var kind, data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && kind == event:
			return data
		case line == "":
			kind, data = "", ""
		case strings.HasPrefix(line, "event: "):
			kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: ") && data == "":
			data = strings.TrimPrefix(line, "data: ")
		case strings.HasPrefix(line, "data: "):
			data += "\n" + strings.TrimPrefix(line, "data: ") // SSE joins a message's data lines
		}
	}
}

func TestLiveOverviewSendsChangesAndHeartbeats(t *testing.T) {
	u := startUI(t, nil)
	cookie := u.login(t)
	req, _ := http.NewRequest("GET", u.hs.URL+u.scoped(cookie, "/live/overview"), nil)
	req.Header.Set("Cookie", cookie)
	req.Header.Set("Origin", "http://"+u.host) // a same-origin EventSource may send it
	tr := &http.Transport{DisableKeepAlives: true}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		t.Fatalf("stream: %d %q; want 200 text/event-stream", resp.StatusCode, ct)
	}
	wantSecurityHeaders(t, "stream", resp)
	r := bufio.NewReader(resp.Body)
	if first := readEvent(t, r, "parts"); !strings.Contains(first, `<section id="tasks-section">`) ||
		!strings.Contains(first, `id="no-tasks" class="empty">`) {
		t.Fatalf("first message %s; want every part, the tasks saying there are none", first)
	}
	u.src.set(func(s *api.Status) {
		s.Tasks = append(s.Tasks, api.Task{ID: "a1a1a1a1-task", Status: "running"})
	})
	next := readEvent(t, r, "parts")
	if !strings.Contains(next, `<tr data-id="a1a1a1a1-task">`) {
		t.Fatalf("after a task was set: %s; want it listed", next)
	}
	if strings.Contains(next, `id="events-section"`) {
		t.Errorf("after a task was set the events were sent again, unchanged: %s", next)
	}
	// Nothing changes now: only heartbeat comments come, no repeated overview.
	deadline := time.Now().Add(300 * time.Millisecond)
	beats := 0
	for time.Now().Before(deadline) {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(line, "event: parts") {
			t.Fatalf("an unchanged overview was sent again")
		}
		if strings.HasPrefix(line, ": heartbeat") {
			beats++
		}
	}
	if beats == 0 {
		t.Errorf("no heartbeat in 300 ms with a 50 ms heartbeat")
	}
	resp.Body.Close()
	tr.CloseIdleConnections()
}

func TestOverviewRendersTheSource(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	src := &fakeSource{
		status: api.Status{Version: "v1.2.3", Home: "/srv/vibe",
			Stores: []api.Store{{ID: "id-acme", Name: "Acme Shop", Slug: "acme-shop", Backend: "chrome"},
				{ID: "id-zin", Name: "Zin <b>", Slug: "zin", Backend: "ziniao"}},
			Browsers: []api.Browser{
				{Key: "id-acme", Slug: "acme-shop", Status: "running", PID: 4242, Clients: 3, Tabs: 7,
					StartedAt: now.Add(-90 * time.Minute), RelaunchMax: 3, RelaunchesLeft: 2},
				{Key: "id-zin", Slug: "zin", Status: "stopped", RelaunchMax: 3, RelaunchesLeft: 0},
				{Key: api.WebKey, Slug: api.WebKey, Status: "stopped"}},
			Tasks: []api.Task{{ID: "b2b2b2b2-done", Store: "id-acme", Status: "completed"},
				{ID: "a1a1a1a1-live", Store: "id-acme", Status: "running", LeaseUntil: now.Add(59 * time.Minute)},
				{ID: "c3c3c3c3-late", Status: "running", LeaseUntil: now.Add(-time.Second)}}},
		events: []api.Event{
			{At: now.Add(-time.Minute), Kind: api.EventBrowserRelaunched, StoreID: "id-acme", Message: "relaunched"},
			{At: now, Kind: api.EventBudgetSpent, StoreID: "id-zin", Message: "zin died 3 times"}},
	}
	u := startUI(t, src)
	u.clock.now = now
	cookie := u.login(t)
	page := body(t, u.do(t, "GET", "/", map[string]string{"Cookie": cookie}))
	for _, want := range []string{
		"v1.2.3", "/srv/vibe",
		`<a href="store/acme-shop">Acme Shop</a>`, "Zin &lt;b&gt;", // escaped, never markup
		`<td class="pid num">4242</td>`, `<td class="uptime">1 h 30 min</td>`, `<td class="relaunches">2 of 3</td>`,
		`<td class="relaunches spent">spent</td>`, `<td class="relaunches">no limit</td>`,
		`<td class="clients num">3</td>`, `<td class="tabs num">7</td>`, "Web browser",
		`<td class="lease">59 min left</td>`, `<span class="pill completed">completed</span>`,
		`<td class="store">–</td>`, `<td class="lease">expired</td>`,
		`<tr class="alert">`, "zin died 3 times", "2 stores · 1 browser running", "relaunch_budget_spent on zin at",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if strings.Index(page, "a1a1a1a1-live") > strings.Index(page, "b2b2b2b2-done") {
		t.Errorf("a running task is listed after a completed one")
	}
	if strings.Index(page, "zin died") > strings.Index(page, ">relaunched<") {
		t.Errorf("events are not newest first")
	}
	if strings.Contains(page, `id="no-stores" class="empty">`) || strings.Contains(page, `id="no-tasks" class="empty">`) {
		t.Errorf("an empty state is shown although there are stores and tasks")
	}
}

func TestOverviewEmptyStates(t *testing.T) {
	u := startUI(t, nil)
	page := body(t, u.do(t, "GET", "/", map[string]string{"Cookie": u.login(t)}))
	for _, want := range []string{
		`id="no-stores" class="empty">`, "vibe-browser store add NAME",
		`id="no-tasks" class="empty">`, "vibe-browser env --store SLUG --task ID",
		`id="no-events" class="empty">`, "Nothing has happened yet",
		`id="attention" class="banner alert" hidden`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("empty overview lacks %q", want)
		}
	}
}

func TestOverviewSaysWhenTheSourceFails(t *testing.T) {
	u := startUI(t, &fakeSource{err: errors.New("database is locked")})
	page := body(t, u.do(t, "GET", "/", map[string]string{"Cookie": u.login(t)}))
	if !strings.Contains(page, "could not say its status: database is locked") {
		t.Errorf("overview of a failing source does not say why")
	}
}

func TestRemoteUIOwnsOnlyItsAddress(t *testing.T) {
	s := New(Config{Host: "192.168.1.5", Port: 9399, Source: &fakeSource{}, Log: zerolog.Nop()})
	if got := s.NewLogin().URL; !strings.HasPrefix(got, "http://192.168.1.5:9399/login?code=") {
		t.Errorf("remote login URL %q; want it on 192.168.1.5:9399", got)
	}
	if !s.ownHosts["192.168.1.5:9399"] || s.ownHosts["localhost:9399"] || s.ownHosts["127.0.0.1:9399"] {
		t.Errorf("remote UI's own hosts %v; want only 192.168.1.5:9399", s.ownHosts)
	}
}

func TestServeEndsLiveStreamsOnShutdown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	s := New(Config{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, Source: src, Log: zerolog.Nop(),
		PollEvery: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()

	l := s.NewLogin()
	tr := &http.Transport{DisableKeepAlives: true}
	client := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(l.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	req, _ := http.NewRequest("GET", s.URL()+resp.Cookies()[0].Path+"/live/overview", nil)
	req.AddCookie(resp.Cookies()[0])
	stream, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	readEvent(t, bufio.NewReader(stream.Body), "parts")

	began := time.Now()
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve() = %v; want nil after its context ended", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5s of its context ending, with a live stream open")
	}
	if took := time.Since(began); took > 900*time.Millisecond {
		t.Errorf("Serve took %v to stop: the open stream held it up to the shutdown bound", took)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Errorf("the UI still accepts connections after Serve returned")
	}
	tr.CloseIdleConnections()
}
