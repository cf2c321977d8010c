package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// fakeCluster is host1's view of the cluster: where each store runs, and a door to host3's UI that hands each
// connection to the owner's Server, recording what reached it.
type fakeCluster struct {
	owner *Server // host3's UI

	mu      sync.Mutex // mu guards the fields below
	owners  map[string]Owner
	dials   int
	hang    bool         // the door answers nothing: DialUI waits for its context
	reached bytes.Buffer // every byte host3's UI read
}

func (c *fakeCluster) Owner(_ context.Context, slug string) (Owner, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.owners[slug]
	return o, ok
}

func (c *fakeCluster) DialUI(ctx context.Context, host string) (net.Conn, error) {
	c.mu.Lock()
	c.dials++
	hang := c.hang
	c.mu.Unlock()
	if hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if host != "host3" {
		return nil, errors.New("no door of host " + host)
	}
	here, there := net.Pipe()
	if err := c.owner.ServeHost("host1", recording{Conn: there, c: c}); err != nil {
		here.Close()
		return nil, err
	}
	return here, nil
}

func (c *fakeCluster) MovesAfter() time.Duration { return 10 * time.Second }

func (c *fakeCluster) dialed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dials
}

func (c *fakeCluster) read() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reached.String()
}

// recording is host3's end of a door connection: what it reads is noted.
type recording struct {
	net.Conn
	c *fakeCluster
}

func (r recording) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.c.mu.Lock()
	r.c.reached.Write(p[:n])
	r.c.mu.Unlock()
	return n, err
}

// paneUIs are host1's UI, which shows the store "shop" of host3, and host3's, which runs it (storeUI's).
func paneUIs(t *testing.T) (host1 *uiUnderTest, host3 *uiUnderTest, c *fakeCluster, fb *fakeBrowser) {
	t.Helper()
	host3, fb = storeUI(t)
	host3.src.set(func(st *api.Status) { st.Host, st.Browsers[0].Host = "host3", "host3" })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- host3.srv.Serve(ctx, ln) }() // its side for other hosts runs with Serve
	c = &fakeCluster{owner: host3.srv, owners: map[string]Owner{
		"shop": {Host: "host3", Store: "Shop", Alive: true, Quiet: 400 * time.Millisecond}}}
	host1 = startUI(t, &fakeSource{cluster: c, status: api.Status{Version: "v-test", Host: "host1",
		Stores:   []api.Store{{ID: "S1", Name: "Shop", Slug: "shop", Backend: "chrome", Host: "host3"}},
		Browsers: []api.Browser{{Key: "S1", Slug: "shop", Status: api.StatusRunning, Host: "host3"}, {Key: api.WebKey, Slug: api.WebKey}}}})
	t.Cleanup(func() {
		host1.srv.relay.conns.CloseIdleConnections()
		cancel()
		if err := <-served; err != nil {
			t.Errorf("host3's UI Serve: %v", err)
		}
	})
	return host1, host3, c, fb
}

// host1's store page of a store of host3 is host3's, through the door: host3's clients and tabs, its links
// and forms under the person's session on host1, with host1's form token; the headers are host1's, once; and
// host3 never sees the person's cookie.
func TestRelayShowsAStoreOfAnotherHost(t *testing.T) {
	host1, _, c, _ := paneUIs(t)
	cookie := host1.login(t)
	resp := host1.do(t, "GET", "/store/shop", map[string]string{"Cookie": cookie, "Accept": "text/html"})
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("host1's GET /store/shop of host3's store = %d; want 200:\n%s", resp.StatusCode, page)
	}
	base := host1.scoped(cookie, "/")
	for _, want := range []string{`<base href="` + base + `">`, `href="store/shop/tab/T1"`, "Orders",
		`data-src="store/shop/tab/T1/thumb.jpg"`, `value="` + host1.token(t, cookie) + `"`,
		"runs on host <strong>host3</strong>", "through the UI of host <strong>host1</strong>"} {
		if !strings.Contains(page, want) {
			t.Errorf("host1's page of host3's store lacks %q", want)
		}
	}
	wantSecurityHeaders(t, "a relayed page", resp)
	if n := len(resp.Header.Values("Content-Security-Policy")); n != 1 {
		t.Errorf("a relayed page carries %d CSP headers; want host1's one", n)
	}
	if got := resp.Header.Values("Set-Cookie"); len(got) != 0 {
		t.Errorf("a relayed page sets cookies %q", got)
	}
	session := strings.TrimPrefix(cookie, sessionCookie+"=")
	if reached := c.read(); !strings.Contains(reached, "GET /store/shop ") || strings.Contains(reached, session) ||
		strings.Contains(reached, sessionCookie) {
		t.Errorf("host3 read %q; want the store's route, never the person's cookie", reached)
	}

	// The thumbnails come through too, to the UI's own pages only.
	resp = host1.do(t, "GET", "/store/shop/tab/T1/thumb.jpg", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "same-origin"})
	if b := body(t, resp); resp.StatusCode != http.StatusOK || b != "\xff\xd8jpeg of T1" {
		t.Errorf("host1's thumbnail of host3's tab = %d %q; want host3's picture", resp.StatusCode, b)
	}
}

// Each access rule is host1's, applied before anything goes to host3: no session, a foreign Origin, a form
// without its token, a thumbnail for another site are refused by host1, and host3 hears of none of them. A form
// with its token is host1's to check: it reaches host3 without it, and host3's answer sends the person on under
// their session on host1.
func TestRelayAppliesTheRulesFirst(t *testing.T) {
	host1, _, c, fb := paneUIs(t)
	cookie := host1.login(t)
	tok := host1.token(t, cookie)
	refused := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
		want   int
	}{
		{"no session", "GET", "/store/shop", map[string]string{"Accept": "text/html"}, http.StatusUnauthorized},
		{"another session's cookie", "GET", "/store/shop", map[string]string{"Cookie": sessionCookie + "=" + strings.Repeat("ab", 16), "Accept": "text/html"}, http.StatusUnauthorized},
		{"foreign origin", "POST", "/store/shop/tabs", map[string]string{"Cookie": cookie, "Origin": "http://evil.example", "Form": "url=x.example&" + formTokenField + "=" + tok}, http.StatusForbidden},
		{"cross-site form", "POST", "/store/shop/start", map[string]string{"Cookie": cookie, "Origin": "null", "Sec-Fetch-Site": "cross-site", "Form": formTokenField + "=" + tok}, http.StatusForbidden},
		{"form without its token", "POST", "/store/shop/tabs", map[string]string{"Cookie": cookie, "Origin": "null", "Form": "url=x.example"}, http.StatusForbidden},
		{"form with a wrong token", "POST", "/store/shop/tabs", map[string]string{"Cookie": cookie, "Form": "url=x.example&" + formTokenField + "=" + strings.Repeat("0", 64)}, http.StatusForbidden},
		{"thumbnail for another site", "GET", "/store/shop/tab/T1/thumb.jpg", map[string]string{"Cookie": cookie, "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"socket from a foreign origin", "GET", "/store/shop/tab/T1/ws", map[string]string{"Cookie": cookie, "Origin": "http://evil.example", "Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}, http.StatusForbidden},
	}
	for _, tt := range refused {
		resp := host1.do(t, tt.method, tt.path, tt.hdr)
		b := body(t, resp)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: host1 answered %d %q; want %d", tt.name, resp.StatusCode, b, tt.want)
		}
	}
	if n := c.dialed(); n != 0 {
		t.Fatalf("host1 opened %d door connections to host3 for requests it refused; want none (host3 read %q)", n, c.read())
	}

	resp := host1.do(t, "POST", "/store/shop/tabs", map[string]string{"Cookie": cookie, "Origin": "null",
		"Form": "url=shop.example%2Fhelp&" + formTokenField + "=" + tok})
	body(t, resp)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != host1.scoped(cookie, "/store/shop/tab/NEWTAB") {
		t.Errorf("a new human tab through host1 = %d to %q; want 303 to its tab page under the session on host1", resp.StatusCode, loc)
	}
	fb.mu.Lock()
	opened := fb.newTabURL
	fb.mu.Unlock()
	if opened != "https://shop.example/help" {
		t.Errorf("host3 opened a human tab at %q; want the form's https://shop.example/help", opened)
	}
	if reached := c.read(); strings.Contains(reached, tok) && strings.Contains(reached, formTokenField+"=") {
		t.Errorf("the form reached host3 with its token in the body: %q", reached)
	}
}

// The live view and the takeover of a tab of host3 work from host1: frames come through the door, Take over
// holds the tab in host3's mux for the person of host1 (their viewer id there, named with host1), and input
// reaches the tab.
func TestRelayCarriesTheTakeover(t *testing.T) {
	host1, _, _, fb := paneUIs(t)
	cookie := host1.login(t)
	hdr := http.Header{"Cookie": {cookie}, "Origin": {"http://" + host1.host}}
	c, resp, err := dialTab(t, host1, "T1", hdr)
	if err != nil {
		t.Fatalf("the live view of host3's tab through host1: %v (%v)", err, resp)
	}
	if _, frame := readView(t, c); string(frame) != "\xff\xd8frame" {
		t.Fatalf("the first frame through host1 = %q; want host3's", frame)
	}
	fb.mu.Lock()
	v := fb.views[len(fb.views)-1]
	fb.mu.Unlock()
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hold"}`))
	readUntil(t, c, `the metadata saying "you" hold the tab`, func(typ string, b []byte) bool {
		var m viewMeta
		return typ == "meta" && json.Unmarshal(b, &m) == nil && m.Hold == "you"
	})
	req, _ := http.NewRequest("GET", "/", nil)
	req.Header.Set("Cookie", cookie)
	if want := viewerID(req) + "@host1"; v.HeldBy() != want {
		t.Errorf("host3's tab is held by %q; want the person of host1, %q", v.HeldBy(), want)
	}
	c.WriteMessage(websocket.TextMessage, []byte(`{"type":"text","text":"hello"}`))
	testkit.WaitFor(t, 5*time.Second, "the text to reach host3's tab", func() bool {
		got := v.got()
		return len(got) == 1 && got[0] == "text hello"
	})
}

// A store whose host is dead, or whose host's door does not answer within RelayBound, gets the person a page
// at once saying the host is unreachable, since when it has been silent and what to do: never a wait, never
// a bare 502. The open store page's stream says the same in its banner.
func TestRelayUnreachableHost(t *testing.T) {
	host1, _, c, _ := paneUIs(t)
	cookie := host1.login(t)
	c.mu.Lock()
	c.owners["shop"] = Owner{Host: "host3", Store: "Shop", Quiet: 25 * time.Second}
	c.mu.Unlock()
	began := time.Now()
	resp := host1.do(t, "GET", "/store/shop", map[string]string{"Cookie": cookie, "Accept": "text/html"})
	page := body(t, resp)
	if took := time.Since(began); took > 500*time.Millisecond {
		t.Errorf("the page of a dead host's store took %v; want it at once", took)
	}
	for _, want := range []string{"Host host3 is unreachable", "no heartbeat for 25 s", "10 s", "vibe-browser status"} {
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page, want) {
			t.Errorf("the page of a dead host's store = %d, lacking %q:\n%s", resp.StatusCode, want, page)
		}
	}
	if n := c.dialed(); n != 0 {
		t.Errorf("host1 dialled a dead host's door %d times; want none", n)
	}

	c.mu.Lock()
	c.owners["shop"] = Owner{Host: "host3", Store: "Shop", Alive: true, Quiet: time.Second}
	c.hang = true
	c.mu.Unlock()
	began = time.Now()
	resp = host1.do(t, "GET", "/store/shop/tab/T1", map[string]string{"Cookie": cookie, "Accept": "text/html"})
	page = body(t, resp)
	if took := time.Since(began); took > RelayBound+time.Second {
		t.Errorf("the page of a store whose host's door is silent took %v; want about %v", took, RelayBound)
	}
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page, "did not answer at its door within 1 s") ||
		!strings.Contains(page, "Host host3 is unreachable") {
		t.Errorf("the page of a store whose host's door is silent = %d:\n%s", resp.StatusCode, page)
	}

	// The store page's live stream: its banner says so.
	req, _ := http.NewRequest("GET", host1.hs.URL+host1.scoped(cookie, "/live/store/shop"), nil)
	req.Header.Set("Cookie", cookie)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	sse, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	br := bufio.NewReader(sse.Body)
	var event strings.Builder
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream of an unreachable store: %v after %q", err, event.String())
		}
		if line == "\n" {
			break
		}
		event.WriteString(line)
	}
	if got := event.String(); !strings.Contains(got, "event: parts") || !strings.Contains(got, "Host host3") &&
		!strings.Contains(got, "host host3") || !strings.Contains(got, `class="pill unreachable"`) {
		t.Errorf("the stream of an unreachable store sent %q; want its store part with the banner", got)
	}
}

// host3's side for other hosts serves a store's routes only, and only to a request that speaks for its person;
// nothing a door hands over reaches the overview, a task or a login.
func TestFromHostServesStoreRoutesOnly(t *testing.T) {
	_, host3, _, _ := paneUIs(t)
	good := "X-Vibe-Relay-Base: /s/" + strings.Repeat("a", 32) + "/\r\nX-Vibe-Relay-Viewer: " + strings.Repeat("b", 16) +
		"\r\nX-Vibe-Relay-Token: " + strings.Repeat("c", 64) + "\r\n"
	tests := []struct {
		name, request string
		want          int
	}{
		{"the overview", "GET / HTTP/1.1\r\nHost: host3\r\n" + good + "\r\n", http.StatusNotFound},
		{"a login", "GET /login?code=x HTTP/1.1\r\nHost: host3\r\n" + good + "\r\n", http.StatusNotFound},
		{"a task", "GET /task/" + task + " HTTP/1.1\r\nHost: host3\r\n" + good + "\r\n", http.StatusNotFound},
		{"no person", "GET /store/shop HTTP/1.1\r\nHost: host3\r\n\r\n", http.StatusBadRequest},
		{"a store page", "GET /store/shop HTTP/1.1\r\nHost: host3\r\n" + good + "\r\n", http.StatusOK},
	}
	for _, tt := range tests {
		here, there := net.Pipe()
		if err := host3.srv.ServeHost("host1", there); err != nil {
			t.Fatal(err)
		}
		here.SetDeadline(time.Now().Add(5 * time.Second))
		go io.WriteString(here, tt.request)
		resp, err := http.ReadResponse(bufio.NewReader(here), nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		here.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("%s from another host = %d %q; want %d", tt.name, resp.StatusCode, b, tt.want)
		}
		wantSecurityHeaders(t, tt.name+" from another host", resp)
	}
}
