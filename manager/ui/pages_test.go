package ui

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/mux"
	"vibebrowser/mux/downloads"
)

// fakeBrowser is a running browser's operator API with fixed clients; its views record their input.
type fakeBrowser struct {
	mu        sync.Mutex // mu guards the fields below
	clients   []mux.ClientInfo
	thumbs    []time.Duration // the time left of each Thumbnail's context
	views     []*fakeView
	newTabURL string
	closed    []string
	infoCalls int           // PageInfo calls
	infoGate  chan struct{} // when set, PageInfo waits for it to close (a browser slow to answer)
}

func (b *fakeBrowser) Clients() []mux.ClientInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clients
}

func (b *fakeBrowser) Thumbnail(ctx context.Context, id string, maxWidth, quality int) ([]byte, error) {
	dl, ok := ctx.Deadline()
	b.mu.Lock()
	defer b.mu.Unlock()
	if !ok {
		b.thumbs = append(b.thumbs, -1)
	} else {
		b.thumbs = append(b.thumbs, time.Until(dl))
	}
	return []byte("\xff\xd8jpeg of " + id), nil
}

func (b *fakeBrowser) PageInfo(ctx context.Context, id string) (string, string, error) {
	b.mu.Lock()
	b.infoCalls++
	gate := b.infoGate
	b.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return "", "", ctx.Err()
		}
	}
	for _, c := range b.Clients() {
		for _, t := range c.Tabs {
			if t.ID == id {
				return "now " + t.Title, t.URL, nil
			}
		}
	}
	return "", "", mux.ErrNoTarget
}

func (b *fakeBrowser) View(ctx context.Context, id string, opt mux.ViewOptions) (View, error) {
	v := &fakeView{opt: opt, frames: make(chan mux.Frame, 1), done: make(chan struct{})}
	if t, ok := findTab(b, id); ok {
		v.heldBy = t.HeldBy
	}
	v.frames <- mux.Frame{JPEG: []byte("\xff\xd8frame"), DeviceWidth: 800, DeviceHeight: 600}
	b.mu.Lock()
	b.views = append(b.views, v)
	b.mu.Unlock()
	return v, nil
}

func (b *fakeBrowser) NewHumanTab(_ context.Context, url string) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.newTabURL = url
	return "NEWTAB", nil
}

func (b *fakeBrowser) CloseHumanTab(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = append(b.closed, id)
	return nil
}

func (b *fakeBrowser) Viewers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, v := range b.views {
		if !v.isClosed() {
			n++
		}
	}
	return n
}

// fakeView sends one frame and records what it was asked to do.
type fakeView struct {
	opt     mux.ViewOptions
	frames  chan mux.Frame
	heldBy  string     // another viewer holding the tab, if any (Hold fails)
	mu      sync.Mutex // mu guards the fields below
	calls   []string
	holding bool
	holder  string
	closed  bool
	done    chan struct{}
}

func (v *fakeView) record(s string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls = append(v.calls, s)
	return nil
}

func (v *fakeView) got() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string{}, v.calls...)
}

func (v *fakeView) isClosed() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.closed
}

func (v *fakeView) Next(ctx context.Context) (mux.Frame, error) {
	select {
	case f := <-v.frames:
		return f, nil
	case <-v.done:
		return mux.Frame{}, mux.ErrViewClosed
	case <-ctx.Done():
		return mux.Frame{}, ctx.Err()
	}
}
func (v *fakeView) Done() <-chan struct{} { return v.done }
func (v *fakeView) Err() error            { return mux.ErrViewClosed }
func (v *fakeView) Mouse(_ context.Context, e mux.MouseEvent) error {
	return v.record(e.Type + " " + e.Button)
}
func (v *fakeView) Key(_ context.Context, e mux.KeyEvent) error {
	return v.record(e.Type + " " + e.Key + " " + e.Text)
}
func (v *fakeView) InsertText(_ context.Context, t string) error { return v.record("text " + t) }
func (v *fakeView) Navigate(_ context.Context, u string) error   { return v.record("navigate " + u) }
func (v *fakeView) Back(context.Context) error                   { return v.record("back") }
func (v *fakeView) Forward(context.Context) error                { return v.record("forward") }
func (v *fakeView) Reload(context.Context) error                 { return v.record("reload") }
func (v *fakeView) Hold(holder string) error {
	if v.heldBy != "" && v.heldBy != holder {
		return mux.ErrHeldByOther
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.holding, v.holder = true, holder
	return nil
}
func (v *fakeView) Release() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.holding = false
}
func (v *fakeView) HeldBy() string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.holding {
		return v.holder
	}
	return v.heldBy
}
func (v *fakeView) Holding() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.holding
}
func (v *fakeView) Close() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if !v.closed {
		v.closed = true
		close(v.done)
	}
	return nil
}

const task = "0123456789abcdef0123456789abcdef"

// storeUI is a UI whose store "shop" runs a browser with one client of each kind.
func storeUI(t *testing.T) (*uiUnderTest, *fakeBrowser) {
	t.Helper()
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	fb := &fakeBrowser{clients: []mux.ClientInfo{
		{ID: task, Connected: true, LastActivity: now.Add(-5 * time.Second), Tabs: []mux.TabInfo{
			{ID: "T1", Type: "page", URL: "https://shop.example/orders", Title: "Orders", Owner: task},
			{ID: "W1", Type: "service_worker", URL: "https://shop.example/sw.js", Owner: task}}},
		{ID: task + "-w2", Connected: false, Tabs: []mux.TabInfo{}},
		{ID: "aux", Connected: true},
		{ID: "manual", Connected: true},
		{ID: "anon-k9f3q2", Connected: true},
		{ID: mux.HumanClient, Connected: true, Tabs: []mux.TabInfo{
			{ID: "H1", Type: "page", URL: "https://shop.example/login", Title: "Log in", Owner: mux.HumanClient, Human: true}}},
	}}
	src := &fakeSource{status: api.Status{Version: "v-test",
		Stores:   []api.Store{{ID: "S1", Name: "Shop", Slug: "shop", Backend: "chrome"}},
		Browsers: []api.Browser{{Key: "S1", Slug: "shop", Status: api.StatusRunning}, {Key: api.WebKey, Slug: api.WebKey, Status: api.StatusStopped}},
		Tasks:    []api.Task{{ID: task, Store: "S1", Status: "running"}}},
		browsers: map[string]*fakeBrowser{"shop": fb}, noStore: map[string]bool{"gone": true},
		downloads: map[string][]api.Download{
			"shop": {
				{OwnerDir: task, Name: "orders.csv", Size: 2048, Path: "/h/downloads/shop/" + task + "/orders.csv", At: now.Add(-time.Hour)},
				{OwnerDir: "aux", Name: "payout.pdf", Size: 10, Path: "/h/downloads/shop/aux/payout.pdf", At: now.Add(-30 * time.Minute)},
				{OwnerDir: task, Name: "orders (1).csv", Size: 3 << 20, Path: "/h/downloads/shop/" + task + "/orders (1).csv", At: now.Add(-time.Minute)},
			},
			"web": {{OwnerDir: downloads.UnattributedDir, Name: "x.bin", Size: 1, Path: "/h/downloads/_web/unattributed/x.bin", At: now}},
		}}
	return startUI(t, src), fb
}

func TestClientKind(t *testing.T) {
	tasks := map[string]bool{task: true}
	tests := []struct{ id, want string }{
		{task, "task"},
		{task + "-w3", "worker"},
		{"aux", "aux"},
		{"manual", "manual"},
		{"human", "human"},
		{"anon-k9f3q2", "discovery"},
		{"othertask", "named"},
		{"x", "named"},
	}
	for _, tt := range tests {
		if got, _ := clientKind(tt.id, tasks); got != tt.want {
			t.Errorf("clientKind(%q) = %q; want %q", tt.id, got, tt.want)
		}
	}
}

func TestStorePageListsClientsAndTabs(t *testing.T) {
	u, _ := storeUI(t)
	cookie := u.login(t)
	resp := u.do(t, "GET", "/store/shop", map[string]string{"Cookie": cookie, "Accept": "text/html"})
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /store/shop = %d; want 200:\n%s", resp.StatusCode, page)
	}
	for _, want := range []string{
		`<section class="client task" data-id="` + task + `">`,
		`worker slot 2 of task <a href="task/` + task + `"><code>` + task + `</code></a>`,
		`<section class="client aux"`, `<section class="client manual"`, `<section class="client discovery" data-id="anon-k9f3q2">`,
		`<section class="client human"`,
		`href="store/shop/tab/T1"`, `data-src="store/shop/tab/T1/thumb.jpg"`, "Orders", "https://shop.example/orders",
		`href="store/shop/tab/H1"`, "in grace", "New human tab",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the store page lacks %q", want)
		}
	}
	if strings.Contains(page, "W1") {
		t.Errorf("the store page lists the service worker W1 as a tab")
	}
	resp = u.do(t, "GET", "/store/gone", map[string]string{"Cookie": cookie, "Accept": "text/html"})
	if b := body(t, resp); resp.StatusCode != http.StatusNotFound || !strings.Contains(b, "store list") {
		t.Errorf("GET /store/gone = %d; want 404 saying where the stores are:\n%s", resp.StatusCode, b)
	}
}

func TestStorePageListsDownloads(t *testing.T) {
	u, _ := storeUI(t)
	cookie := u.login(t)
	page := body(t, u.do(t, "GET", "/store/shop", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	order := []string{
		`<div class="downloads" data-owner="` + task + `">`, "task (its --worker slots included)", "2 files",
		"orders (1).csv", "3.0 MiB", "orders.csv", "2.0 KiB", "/h/downloads/shop/" + task + "/orders.csv",
		`<div class="downloads" data-owner="aux">`, "1 file", "payout.pdf", "10 B",
	}
	at := 0
	for _, want := range order {
		i := strings.Index(page[at:], want)
		if i < 0 {
			t.Fatalf("the store page lacks %q after byte %d (owners newest first, each owner's newest file first)", want, at)
		}
		at += i + len(want)
	}
	if strings.Contains(page, "No downloads yet") && !strings.Contains(page, `id="no-downloads" hidden`) {
		t.Error("the store page says there are no downloads")
	}
	if strings.Contains(page, `id="downloads-note">`) {
		t.Error("the store page says not every download was counted, of three")
	}
	u.src.mu.Lock()
	for i := range maxDownloads + 1 {
		u.src.downloads["shop"] = append(u.src.downloads["shop"], api.Download{OwnerDir: "aux", Name: fmt.Sprintf("n%d", i)})
	}
	u.src.mu.Unlock()
	many := body(t, u.do(t, "GET", "/store/shop", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	if !strings.Contains(many, "Counted among the newest 500 downloads") || !strings.Contains(many, "500 files") {
		t.Error("a store page with more downloads than it reads does not say so")
	}
	stopped := body(t, u.do(t, "GET", "/store/web", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	if !strings.Contains(stopped, "x.bin") || !strings.Contains(stopped, "downloads of tabs no client here opened") {
		t.Error("a stopped browser's page does not list its downloads")
	}
}

func TestDownloadGroupsBounded(t *testing.T) {
	now := time.Now()
	var ds []api.Download
	for i := range maxDownloadRows + 5 {
		ds = append(ds, api.Download{OwnerDir: "aux", Name: fmt.Sprintf("f%d", i), At: now.Add(time.Duration(i) * time.Second)})
	}
	g := downloadGroups(ds, nil, now)
	if len(g) != 1 || len(g[0].Files) != maxDownloadRows || g[0].Files[0].Name != fmt.Sprintf("f%d", maxDownloadRows+4) ||
		!strings.Contains(g[0].Count, "25 files") {
		t.Errorf("downloadGroups of %d files = %+v; want the newest %d and the count", len(ds), g, maxDownloadRows)
	}
}

func TestStorePageOffersToStartAStoppedBrowser(t *testing.T) {
	u, _ := storeUI(t)
	cookie := u.login(t)
	page := body(t, u.do(t, "GET", "/store/web", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	if !strings.Contains(page, "The browser is stopped") || !strings.Contains(page, `action="store/web/start"`) {
		t.Errorf("the stopped web browser's page does not offer to start it:\n%s", page)
	}
	u.src.mu.Lock()
	u.src.startErr = errors.New("the relaunch budget is spent")
	u.src.mu.Unlock()
	resp := u.do(t, "POST", "/store/web/start", map[string]string{"Cookie": cookie, "Origin": "http://" + u.host})
	body(t, resp)
	loc := resp.Header.Get("Location")
	if want := u.scoped(cookie, "/store/web?error=start"); resp.StatusCode != http.StatusSeeOther || loc != want {
		t.Errorf("a failed start = %d to %q; want 303 back to the page, %s", resp.StatusCode, loc, want)
	}
	back := body(t, u.do(t, "GET", "/store/web?error=start", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	if !strings.Contains(back, `<p id="error" class="banner error">The browser did not start: the relaunch budget is spent</p>`) {
		t.Errorf("the page after a failed start lacks the manager's words in its banner:\n%s", back)
	}
	if got := u.src.started; len(got) != 1 || got[0] != "web" {
		t.Errorf("StartBrowser calls = %q; want [web]", got)
	}
}

func TestNewHumanTabGoesToItsPage(t *testing.T) {
	u, fb := storeUI(t)
	cookie := u.login(t)
	req, _ := http.NewRequest("POST", u.hs.URL+u.scoped(cookie, "/store/shop/tabs"), strings.NewReader("url=shop.example%2Flogin"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Cookie", cookie)
	req.Header.Set("Origin", "http://"+u.host)
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	if loc, want := resp.Header.Get("Location"), u.scoped(cookie, "/store/shop/tab/NEWTAB"); loc != want {
		t.Errorf("new human tab redirects to %q; want %s", loc, want)
	}
	if fb.newTabURL != "https://shop.example/login" {
		t.Errorf("NewHumanTab url = %q; want https://shop.example/login", fb.newTabURL)
	}
}

func TestTabURL(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "about:blank"},
		{"about:blank", "about:blank"},
		{"shop.example/login", "https://shop.example/login"},
		{"http://127.0.0.1:8080/form", "http://127.0.0.1:8080/form"},
		{"javascript:alert(1)", ""},
		{"file:///etc/passwd", ""},
		{"chrome://settings", ""},
	}
	for _, tt := range tests {
		got, err := TabURL(tt.in)
		if tt.want == "" && (err == nil || !strings.Contains(err.Error(), "http://")) {
			t.Errorf("TabURL(%q) = %q, %v; want an error naming the allowed form", tt.in, got, err)
		}
		if tt.want != "" && got != tt.want {
			t.Errorf("TabURL(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestThumbnailIsBoundedAndKnowsItsTabs(t *testing.T) {
	u, fb := storeUI(t)
	cookie := u.login(t)
	tests := []struct {
		path string
		want int
	}{
		{"/store/shop/tab/T1/thumb.jpg", http.StatusOK},
		{"/store/shop/tab/NOPE/thumb.jpg", http.StatusNotFound},
		{"/store/shop/tab/W1/thumb.jpg", http.StatusNotFound}, // a worker is no page
		{"/store/web/tab/T1/thumb.jpg", http.StatusNotFound},  // a stopped browser
	}
	for _, tt := range tests {
		resp := u.do(t, "GET", tt.path, map[string]string{"Cookie": cookie})
		b := body(t, resp)
		if resp.StatusCode != tt.want {
			t.Errorf("GET %s = %d; want %d (%s)", tt.path, resp.StatusCode, tt.want, b)
		}
		if tt.want == http.StatusOK && (resp.Header.Get("Content-Type") != "image/jpeg" || b != "\xff\xd8jpeg of T1") {
			t.Errorf("GET %s = %q (%s); want the tab's JPEG", tt.path, b, resp.Header.Get("Content-Type"))
		}
	}
	if len(fb.thumbs) != 1 || fb.thumbs[0] <= 0 || fb.thumbs[0] > thumbTimeout {
		t.Errorf("Thumbnail context time left = %v; want one capture bounded by %v", fb.thumbs, thumbTimeout)
	}
}

// dialTab opens a tab's live view socket.
func dialTab(t *testing.T, u *uiUnderTest, id string, hdr http.Header) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial("ws://"+u.host+u.scoped(hdr.Get("Cookie"), "/store/shop/tab/"+id+"/ws?w=640"), hdr)
	if c != nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, resp, err
}

func TestTabSocketNeedsCookieAndOwnOrigin(t *testing.T) {
	u, _ := storeUI(t)
	cookie := u.login(t)
	tests := []struct {
		name   string
		cookie string
		origin string
		want   int
	}{
		{"no cookie", "", "http://" + u.host, http.StatusUnauthorized},
		{"foreign origin", cookie, "http://evil.example", http.StatusForbidden},
		{"no origin", cookie, "", http.StatusForbidden},
		{"own origin", cookie, "http://" + u.host, http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hdr := http.Header{}
			if tt.cookie != "" {
				hdr.Set("Cookie", tt.cookie)
			}
			if tt.origin != "" {
				hdr.Set("Origin", tt.origin)
			}
			_, resp, err := dialTab(t, u, "T1", hdr)
			if resp == nil {
				t.Fatalf("dial: %v", err)
			}
			if resp.StatusCode != tt.want {
				t.Errorf("upgrade with %s = %d; want %d", tt.name, resp.StatusCode, tt.want)
			}
		})
	}
}

// readView reads the socket until it has the metadata and a frame.
func readView(t *testing.T, c *websocket.Conn) (viewMeta, []byte) {
	t.Helper()
	var meta viewMeta
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		typ, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("read the live view: %v", err)
		}
		if typ == websocket.BinaryMessage {
			return meta, b
		}
		if err := json.Unmarshal(b, &meta); err != nil || meta.Type != "meta" {
			t.Fatalf("text message %s before the frame; want the metadata", b)
		}
	}
}

func TestTabSocketSendsFramesAndHumanTabsOnlyTakeInput(t *testing.T) {
	u, fb := storeUI(t)
	cookie := u.login(t)
	hdr := http.Header{"Cookie": {cookie}, "Origin": {"http://" + u.host}}
	inputs := []string{
		`{"type":"mouse","event":"down","x":10,"y":20,"button":"left","buttons":1,"clicks":1}`,
		`{"type":"key","event":"down","key":"a","code":"KeyA","text":"a"}`,
		`{"type":"text","text":"pasted"}`,
		`{"type":"navigate","url":"shop.example"}`,
		`{"type":"back"}`,
	}
	for _, tt := range []struct {
		tab  string
		want []string
	}{
		{"H1", []string{"mousePressed left", "keyDown a a", "text pasted", "navigate https://shop.example", "back"}},
		{"T1", nil},
	} {
		t.Run(tt.tab, func(t *testing.T) {
			c, _, err := dialTab(t, u, tt.tab, hdr)
			if err != nil {
				t.Fatal(err)
			}
			meta, frame := readView(t, c)
			if meta.Width != 800 || meta.Height != 600 || string(frame) != "\xff\xd8frame" || !strings.HasPrefix(meta.Title, "now ") {
				t.Errorf("live view sent %+v and %q; want 800x600, the page's current title and the frame", meta, frame)
			}
			fb.mu.Lock()
			v := fb.views[len(fb.views)-1]
			fb.mu.Unlock()
			if want := (mux.ViewOptions{MaxFPS: LiveView.MaxFPS, MaxWidth: 640, Quality: LiveView.Quality}); v.opt != want {
				t.Errorf("View options %+v; want %+v (LiveView at the viewer's width)", v.opt, want)
			}
			for _, in := range inputs {
				if err := c.WriteMessage(websocket.TextMessage, []byte(in)); err != nil {
					t.Fatal(err)
				}
			}
			if tt.want == nil {
				_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
				var n viewNote
				for n.Type != "error" {
					if _, b, err := c.ReadMessage(); err != nil {
						t.Fatalf("no refusal of input to an agent's tab: %v", err)
					} else {
						_ = json.Unmarshal(b, &n)
					}
				}
				if !strings.Contains(n.Message, "Take over") {
					t.Errorf("refusal = %q; want it to say how to take the tab over", n.Message)
				}
			}
			testkit.WaitFor(t, 5*time.Second, "the input to reach the view", func() bool { return len(v.got()) >= len(tt.want) })
			if got := v.got(); strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("tab %s got input %q; want %q", tt.tab, got, tt.want)
			}
			c.Close()
			testkit.WaitFor(t, 5*time.Second, "the view to be closed", v.isClosed)
		})
	}
}

func TestSafeNext(t *testing.T) {
	tests := []struct {
		next string
		ok   bool
	}{
		{"/", true},
		{"/store/shop/tab/ABC123", true},
		{"/store/shop?x=1", true},
		{"", false},
		{"store/shop", false},
		{"https://evil.example/", false},
		{"//evil.example/", false},
		{"/\\evil.example/", false},
		{"/store\\..\\x", false},
		{"/store#frag", false},
		{"/store\r\nSet-Cookie: x", false},
		{"javascript:alert(1)", false},
	}
	for _, tt := range tests {
		err := SafeNext(tt.next)
		if (err == nil) != tt.ok {
			t.Errorf("SafeNext(%q) = %v; want ok %v", tt.next, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "must be a path of this UI") {
			t.Errorf("SafeNext(%q) = %q; want the error to name the allowed form", tt.next, err)
		}
	}
}

func TestLoginLandsOnNext(t *testing.T) {
	u, _ := storeUI(t)
	l, err := u.srv.NewLoginTo("/store/shop/tab/H1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(l.URL, "&next=%2Fstore%2Fshop%2Ftab%2FH1") {
		t.Errorf("NewLoginTo URL = %q; want it to carry next", l.URL)
	}
	if _, err := u.srv.NewLoginTo("//evil.example"); err == nil {
		t.Errorf("NewLoginTo(//evil.example) = nil error; want a refusal")
	}
	// A tampered next is refused before the code is spent; the real link then still works, once.
	resp := u.do(t, "GET", "/login?code="+l.Code+"&next=%2F%2Fevil.example", nil)
	if body(t, resp); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("login with next //evil.example = %d; want 400", resp.StatusCode)
	}
	path := strings.TrimPrefix(l.URL, u.srv.URL())
	resp = u.do(t, "GET", path, nil)
	body(t, resp)
	if loc, want := resp.Header.Get("Location"), resp.Cookies()[0].Path+"/store/shop/tab/H1"; resp.StatusCode != http.StatusSeeOther || loc != want {
		t.Errorf("login = %d to %q; want 303 to %s", resp.StatusCode, loc, want)
	}
	resp = u.do(t, "GET", path, nil)
	if body(t, resp); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the same link again = %d; want 401 (single use)", resp.StatusCode)
	}
}

// storeStream opens the store page's live stream of slug.
func storeStream(t *testing.T, u *uiUnderTest, slug string) *bufio.Reader {
	t.Helper()
	resp := u.do(t, "GET", "/live/store/"+slug, map[string]string{"Cookie": u.login(t)})
	t.Cleanup(func() { resp.Body.Close() })
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Fatalf("GET /live/store/%s = %d %q; want 200 text/event-stream", slug, resp.StatusCode, ct)
	}
	return bufio.NewReader(resp.Body)
}

// addHumanTab gives fb's human client the page tab id (a copy of the clients: Clients' answers stay as they were).
func addHumanTab(fb *fakeBrowser, id string) {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	fb.clients = append(fb.clients[:0:0], fb.clients...)
	fb.clients[5].Tabs = append(fb.clients[5].Tabs[:len(fb.clients[5].Tabs):len(fb.clients[5].Tabs)],
		mux.TabInfo{ID: id, Type: "page", Owner: mux.HumanClient, Human: true})
}

func TestLiveStoreSendsChanges(t *testing.T) {
	u, fb := storeUI(t)
	r := storeStream(t, u, "shop")
	first := readEvent(t, r, "parts")
	if !strings.Contains(first, `<div id="store" data-slug="shop"`) || strings.Count(first, `<section class="client `) != 6 ||
		!strings.Contains(first, `<section class="client task" data-id="`+task+`">`) || !strings.Contains(first, `data-id="T1"`) ||
		!strings.Contains(first, `<section id="downloads-section">`) {
		t.Fatalf("first store message = %s; want both parts: the running browser with its 6 clients, and the downloads", first)
	}
	// A new tab of the human client, in memory only (no write): the stream's look every PollEvery finds it.
	addHumanTab(fb, "H2")
	next := readEvent(t, r, "parts")
	human := next[strings.Index(next, `<section class="client human"`):]
	if !strings.Contains(human, `href="store/shop/tab/H2"`) || !strings.Contains(human, `id="thumb-H2" data-keep`) {
		t.Errorf("store message after a new human tab = %s; want H2 listed with its thumbnail", next)
	}
	if strings.Contains(next, "downloads-section") {
		t.Errorf("the unchanged downloads were sent again: %s", next)
	}
}

// TestLiveStoreIsChangeDriven: with PollEvery and Heartbeat an hour, a store page's stream still shows a
// change of the manager's state at once (its Changed signal), reading the state once for it.
func TestLiveStoreIsChangeDriven(t *testing.T) {
	tests := []struct {
		name   string
		change func(*uiUnderTest, *fakeBrowser)
		want   string
	}{
		{"a new tab", func(u *uiUnderTest, fb *fakeBrowser) {
			addHumanTab(fb, "H2")
			u.src.set(func(*api.Status) {}) // the mux's ownership hook writes the tab's owner
		}, `href="store/shop/tab/H2"`},
		{"a new task", func(u *uiUnderTest, fb *fakeBrowser) {
			u.src.set(func(st *api.Status) { st.Tasks = append(st.Tasks, api.Task{ID: "anon-k9f3q2", Status: "running"}) })
		}, `<section class="client task" data-id="anon-k9f3q2">`},
		{"a new download", func(u *uiUnderTest, fb *fakeBrowser) {
			u.src.mu.Lock()
			u.src.downloads["shop"] = append(u.src.downloads["shop"], api.Download{OwnerDir: "manual", Name: "late.pdf", Size: 5})
			u.src.wroteLocked()
			u.src.mu.Unlock()
		}, `<div class="downloads" data-owner="manual">`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, fb := storeUI(t)
			u = startUIWith(t, u.src, time.Hour, time.Hour)
			r := storeStream(t, u, "shop")
			if first := readEvent(t, r, "parts"); strings.Contains(first, tt.want) {
				t.Fatalf("the first message already has %q", tt.want)
			}
			read := u.src.statusReads()
			tt.change(u, fb)
			if next := readEvent(t, r, "parts"); !strings.Contains(next, tt.want) {
				t.Errorf("after %s the stream sent %s; want %q", tt.name, next, tt.want)
			}
			if got := u.src.statusReads() - read; got != 1 {
				t.Errorf("the stream read the status %d times for one change; want 1", got)
			}
		})
	}
}

// TestLiveStoreReadsABurstTogether: writes one after another cost a store page one read every PollEvery,
// and the last of them is shown.
func TestLiveStoreReadsABurstTogether(t *testing.T) {
	u, _ := storeUI(t)
	const every = 40 * time.Millisecond
	u = startUIWith(t, u.src, every, time.Hour)
	r := storeStream(t, u, "shop")
	readEvent(t, r, "parts")
	began, read := time.Now(), u.src.statusReads()
	// Each write waits until the stream waits for the next: every one wakes it.
	writes := 0
	for time.Since(began) < 10*every {
		u.src.set(func(st *api.Status) { st.Browsers[0].Status = fmt.Sprintf("status-%d", writes) })
		writes++
		testkit.WaitFor(t, 5*time.Second, "the stream to wait for the next change", func() bool {
			u.src.mu.Lock()
			defer u.src.mu.Unlock()
			return u.src.changed != nil
		})
	}
	for !strings.Contains(readEvent(t, r, "parts"), fmt.Sprintf(`class="pill status-%d"`, writes-1)) {
	}
	// One read at once, one per PollEvery since, and the one after the last change's.
	if got, most := u.src.statusReads()-read, 2+int(time.Since(began)/every); got > most {
		t.Errorf("%d writes in %v cost %d status reads; want at most %d (one per %v)", writes, time.Since(began), got, most, every)
	}
}

// TestLivePartsAreThePage: each live part is one template whose root element's id is its name, the page
// is drawn of the same parts, and the stream's first message is every part.
func TestLivePartsAreThePage(t *testing.T) {
	u := handoffUI(t)
	cookie := u.login(t)
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Cookie", cookie) // the viewer's parts: their forms carry their token
	for _, tt := range []struct {
		page, path, stream string
		parts              []string
		data               any
	}{
		{"overview", "/", "/live/overview", overviewParts, u.srv.buildOverview(req)},
		{"store", "/store/shop", "/live/store/shop", storeParts, u.srv.forViewer(u.srv.storeView(u.srv.readStore(t.Context(), "shop")), req)},
	} {
		page := body(t, u.do(t, "GET", tt.path, map[string]string{"Cookie": cookie, "Accept": "text/html"}))
		resp := u.do(t, "GET", tt.stream, map[string]string{"Cookie": cookie})
		first := readEvent(t, bufio.NewReader(resp.Body), "parts")
		resp.Body.Close()
		for _, name := range tt.parts {
			var b strings.Builder
			if err := u.srv.pages[tt.page].ExecuteTemplate(&b, name, tt.data); err != nil {
				t.Fatal(err)
			}
			part := b.String()
			if root := regexp.MustCompile(`^<[a-z]+ id="` + name + `"[ >]`); !root.MatchString(part) || !strings.HasSuffix(part, ">") {
				t.Errorf("%s part %q = %.80q…; want one element with the id %q", tt.page, name, part, name)
			}
			if !strings.Contains(page, part) {
				t.Errorf("GET %s does not contain its part %q as the stream draws it", tt.path, name)
			}
			if !strings.Contains(first, part) {
				t.Errorf("the first message of %s lacks the part %q", tt.stream, name)
			}
		}
	}
}

// readUntil reads the live view's text messages until one satisfies ok (frames are skipped).
func readUntil(t *testing.T, c *websocket.Conn, what string, ok func(typ string, b []byte) bool) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for {
		typ, b, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if typ != websocket.TextMessage {
			continue
		}
		var m struct{ Type, Hold, Message string }
		_ = json.Unmarshal(b, &m)
		if ok(m.Type, b) {
			return
		}
	}
}

func TestTabSocketTakeover(t *testing.T) {
	u, fb := storeUI(t)
	cookie := u.login(t)
	hdr := http.Header{"Cookie": {cookie}, "Origin": {"http://" + u.host}}
	click := []byte(`{"type":"mouse","event":"down","x":10,"y":20,"button":"left","buttons":1,"clicks":1}`)
	holdIs := func(want string) func(string, []byte) bool {
		return func(typ string, b []byte) bool {
			var m viewMeta
			return typ == "meta" && json.Unmarshal(b, &m) == nil && m.Hold == want
		}
	}
	noteSays := func(text string) func(string, []byte) bool {
		return func(typ string, b []byte) bool {
			var n viewNote
			return typ == "error" && json.Unmarshal(b, &n) == nil && strings.Contains(n.Message, text)
		}
	}

	c, _, err := dialTab(t, u, "T1", hdr)
	if err != nil {
		t.Fatal(err)
	}
	readView(t, c)
	fb.mu.Lock()
	v := fb.views[len(fb.views)-1]
	fb.mu.Unlock()
	c.WriteMessage(websocket.TextMessage, click)
	readUntil(t, c, "the refusal before a takeover", noteSays("Take over"))
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hold"}`))
	readUntil(t, c, `the metadata saying "you" hold the tab`, holdIs("you"))
	c.WriteMessage(websocket.TextMessage, click)
	testkit.WaitFor(t, 5*time.Second, "the click to reach the held tab", func() bool { return len(v.got()) == 1 })
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"release"}`))
	readUntil(t, c, "the metadata after Release", holdIs(""))
	c.WriteMessage(websocket.TextMessage, click)
	readUntil(t, c, "the refusal after Release", noteSays("Take over"))
	if got := v.got(); len(got) != 1 {
		t.Fatalf("input after Release reached the tab: %q", got)
	}
	c.Close()

	// Another viewer holds it: this one sees so, cannot take it, and its input is refused.
	fb.mu.Lock()
	fb.clients[0].Tabs[0].HeldBy = "someone-else"
	fb.mu.Unlock()
	c2, _, err := dialTab(t, u, "T1", hdr)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, c2, `the metadata saying "other"`, holdIs("other"))
	c2.WriteMessage(websocket.TextMessage, []byte(`{"type":"hold"}`))
	readUntil(t, c2, "the refusal of a second holder", noteSays("Another viewer"))
	c2.WriteMessage(websocket.TextMessage, click)
	readUntil(t, c2, "the refusal of input", noteSays("wait for them to release it"))
}

// TestEveryPostFormCarriesTheToken: each POST form of every page, and of the parts the live streams send,
// carries the viewer's form token in its body (a hidden input), and no other form does (a GET form would put
// it in a URL); the token is the viewer's own, and appears nowhere else.
func TestEveryPostFormCarriesTheToken(t *testing.T) {
	u := handoffUI(t)
	cookie := u.login(t)
	token := u.token(t, cookie)
	input := `<input type="hidden" name="` + formTokenField + `" value="` + token + `">`
	forms := regexp.MustCompile(`(?s)<form\b[^>]*>.*?</form>`)
	check := func(what, html string, posts int) {
		t.Helper()
		seen := 0
		for _, form := range forms.FindAllString(html, -1) {
			post := strings.Contains(form[:strings.Index(form, ">")], `method="post"`)
			if post {
				seen++
			}
			if has := strings.Contains(form, input); has != post {
				t.Errorf("%s: form %.120q… carries the token: %v; want %v (POST: %v)", what, form, has, post, post)
			}
		}
		if seen != posts {
			t.Errorf("%s has %d POST forms; want %d", what, seen, posts)
		}
		if n := strings.Count(html, token); n != seen {
			t.Errorf("%s names the token %d times; want once per POST form (%d)", what, n, seen)
		}
	}
	for _, tt := range []struct {
		path  string
		posts int // the answer to the handoff; start and new tab; close tab; a takeover's human tab
	}{
		{"/", 1}, {"/store/shop", 2}, {"/store/web", 2}, {"/store/shop/tab/H1", 1}, {"/store/shop/tab/T1", 1},
	} {
		resp := u.do(t, "GET", tt.path, map[string]string{"Cookie": cookie, "Accept": "text/html"})
		page := body(t, resp)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d:\n%s", tt.path, resp.StatusCode, page)
		}
		check("GET "+tt.path, page, tt.posts)
	}
	for _, tt := range []struct {
		path  string
		posts int
	}{{"/live/overview", 1}, {"/live/store/shop", 2}} {
		resp := u.do(t, "GET", tt.path, map[string]string{"Cookie": cookie})
		first := readEvent(t, bufio.NewReader(resp.Body), "parts")
		resp.Body.Close()
		check("the first message of "+tt.path, first, tt.posts)
	}
	// Another viewer's pages carry theirs.
	if page := body(t, u.do(t, "GET", "/store/shop", map[string]string{"Cookie": u.login(t)})); strings.Contains(page, token) {
		t.Errorf("another session's store page carries this session's token")
	}
}

// TestEveryTaskIDLinksToItsPage: wherever a page names a task (the overview's tasks and handoffs, the store
// page's clients, worker slots and download folders, a tab's owner), the id links to its task page.
func TestEveryTaskIDLinksToItsPage(t *testing.T) {
	u := handoffUI(t)
	cookie := u.login(t)
	named := regexp.MustCompile(`(<a href="task/` + task + `"[^>]*>)?<code[^>]*>` + task + `</code>`)
	for _, tt := range []struct {
		path  string
		links int // the task ids shown
	}{
		{"/", 2},                  // the tasks table, the handoff's card
		{"/store/shop", 3},        // the task's client, its worker slot's label, its download folder
		{"/store/shop/tab/T1", 1}, // the tab's owner
	} {
		page := body(t, u.do(t, "GET", tt.path, map[string]string{"Cookie": cookie, "Accept": "text/html"}))
		found := named.FindAllStringSubmatch(page, -1)
		if len(found) != tt.links {
			t.Errorf("GET %s names the task %d times; want %d", tt.path, len(found), tt.links)
		}
		for _, m := range found {
			if m[1] == "" {
				t.Errorf("GET %s names the task without a link to /task/%s: %q", tt.path, task, m[0])
			}
		}
	}
}
