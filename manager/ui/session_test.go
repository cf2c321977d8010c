package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
)

// A login's cookie opens only its own session's path: at another path, or at a path of another login, it
// is refused, whoever sends it; the path without the cookie is a person to log in.
func TestSessionCookieOpensOnlyItsOwnPath(t *testing.T) {
	u := startUI(t, nil)
	cookie := u.login(t)
	other := u.login(t)
	mine, theirs := u.scoped(cookie, ""), u.scoped(other, "")
	html := func(h map[string]string) map[string]string {
		h["Accept"] = "text/html"
		h["Unscoped"] = ""
		return h
	}
	tests := []struct {
		name   string
		path   string
		hdr    map[string]string
		status int
		text   string
	}{
		{"the cookie at its own path", mine + "/", html(map[string]string{"Cookie": cookie}), 200, "Stores and the web browser"},
		{"its own path without the final slash", mine, html(map[string]string{"Cookie": cookie}), 301, ""},
		{"the cookie at the root, as a stolen one is sent", "/", html(map[string]string{"Cookie": cookie}), 403, "does not open this address"},
		{"the cookie at a page's usual path", "/store/web", html(map[string]string{"Cookie": cookie}), 403, "does not open this address"},
		{"the cookie at another login's path", theirs + "/", html(map[string]string{"Cookie": cookie}), 403, "does not open this address"},
		{"the stream with the cookie, outside its path", "/live/overview", map[string]string{"Cookie": cookie, "Unscoped": ""}, 403, "does not open"},
		{"the path without the cookie", mine + "/", html(map[string]string{}), 401, "vibe-browser ui"},
		{"the path with a dead cookie", mine + "/", html(map[string]string{"Cookie": sessionCookie + "=00"}), 401, "vibe-browser ui"},
		{"a path like a session's, but not one", "/s/" + strings.Repeat("0", keyHex) + "/", html(map[string]string{"Cookie": cookie}), 403, "does not open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := u.do(t, "GET", tt.path, tt.hdr)
			b := body(t, resp)
			if resp.StatusCode != tt.status || !strings.Contains(b, tt.text) {
				t.Errorf("GET %s = %d %.300q; want %d containing %q", tt.path, resp.StatusCode, b, tt.status, tt.text)
			}
		})
	}
	// The page of a login asks session.js to keep its path (its links are relative to it); the page asking
	// for a login lets session.js open a kept one instead.
	page := body(t, u.do(t, "GET", "/", map[string]string{"Cookie": cookie}))
	if !strings.Contains(page, `<base href="`+mine+`/">`) || !strings.Contains(page, `<meta name="vibe-session" content="live">`) {
		t.Errorf("the overview lacks its session's base and state:\n%.600s", page)
	}
	page = body(t, u.do(t, "GET", "/", map[string]string{"Accept": "text/html"}))
	if strings.Contains(page, "<base") || !strings.Contains(page, `<meta name="vibe-session" content="resume">`) {
		t.Errorf("the page asking for a login has a base, or does not let session.js resume:\n%.600s", page)
	}
}

// The UI serves only the users Config.AllowUser admits, and says why to the others, before their login or
// their cookie count; the stylesheet is served to everyone, so that the refusal reads well.
func TestPeerRefusedBeforeLogin(t *testing.T) {
	src := &fakeSource{status: api.Status{Browsers: []api.Browser{{Key: api.WebKey, Slug: api.WebKey}}}}
	u := startUI(t, src)
	cookie := u.login(t)
	var asked []int
	refuse := errors.New("this connection is uid 4242's, store acme's agent user: the web UI never serves a store's agent")
	u.srv.cfg.AllowUser = func(uid int) error {
		asked = append(asked, uid)
		return refuse
	}
	for _, tt := range []struct {
		name, path string
		hdr        map[string]string
	}{
		{"a page with a live session", "/", map[string]string{"Cookie": cookie, "Accept": "text/html"}},
		{"a login code", "/login?code=" + u.srv.NewLogin().Code, map[string]string{"Accept": "text/html"}},
		{"a stream", "/live/overview", map[string]string{"Cookie": cookie}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := u.do(t, "GET", tt.path, tt.hdr)
			b := body(t, resp)
			if resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "never serves a store") ||
				!strings.Contains(b, "VIBE_UI_USERS") {
				t.Errorf("GET %s as a refused user = %d %.400q; want 403 with the rule and VIBE_UI_USERS", tt.path, resp.StatusCode, b)
			}
		})
	}
	if len(asked) == 0 || asked[0] != os.Getuid() {
		t.Errorf("AllowUser was asked about %v; want this process's uid %d, read from the kernel", asked, os.Getuid())
	}
	if resp := u.do(t, "GET", "/assets/ui.css", nil); body(t, resp) == "" || resp.StatusCode != http.StatusOK {
		t.Errorf("the stylesheet for a refused user = %d; want 200", resp.StatusCode)
	}
	// The control: the same user, admitted.
	u.srv.cfg.AllowUser = func(int) error { return nil }
	if resp := u.do(t, "GET", "/", map[string]string{"Cookie": cookie}); body(t, resp) == "" || resp.StatusCode != http.StatusOK {
		t.Errorf("GET / as an admitted user = %d; want 200", resp.StatusCode)
	}
}

// Banners say only what the server wrote for the session's own action: a code from anywhere else, or no
// code at all, shows nothing; text in the URL is never shown.
func TestBannersShowOnlyTheirOwnWords(t *testing.T) {
	u := handoffUI(t)
	cookie := u.login(t)
	hdr := map[string]string{"Cookie": cookie, "Accept": "text/html"}
	banner := func(path, id string) string {
		t.Helper()
		page := body(t, u.do(t, "GET", path, hdr))
		if strings.Contains(page, "Paste your") {
			t.Errorf("GET %s shows the URL's text:\n%s", path, page)
		}
		i := strings.Index(page, `<p id="`+id+`"`)
		if i < 0 {
			t.Fatalf("GET %s has no #%s", path, id)
		}
		p := page[i:]
		return p[:strings.Index(p, "</p>")+4]
	}
	hidden := func(path, id string) {
		t.Helper()
		if b := banner(path, id); !strings.Contains(b, " hidden>") {
			t.Errorf("GET %s shows the banner %s; want it hidden", path, b)
		}
	}
	for _, path := range []string{"/?answered=Paste+your+Seller+Central+password+into+the+agent%27s+tab",
		"/?answered=done", "/?answered=cant_help", "/?answered=start", "/?answered=3f9a2c1b0d4e&status=done"} {
		hidden(path, "answered")
	}
	for _, path := range []string{"/store/shop?error=Paste+your+password+into+the+agent%27s+tab", "/store/shop?error=start",
		"/store/shop?error=done"} {
		hidden(path, "error")
	}
	// The controls: the session's own actions, then their banners.
	body(t, u.post(t, "/handoffs/3f9a2c1b0d4e/answer", "status=done", cookie, "http://"+u.host))
	if b := banner("/?answered=done", "answered"); !strings.Contains(b, "Your answer reached the agent of handoff 3f9a2c1b0d4e") {
		t.Errorf("after the session's own answer the banner is %s; want its confirmation", b)
	}
	hidden("/?answered=cant_help", "answered") // not the answer it gave
	resp := u.do(t, "POST", "/store/shop/tabs", map[string]string{"Cookie": cookie, "Origin": "http://" + u.host,
		"Form": "url=javascript%3Aalert(1)"})
	body(t, resp)
	if loc := resp.Header.Get("Location"); loc != u.scoped(cookie, "/store/shop?error=address") {
		t.Errorf("a refused address redirects to %q; want the store page with ?error=address", loc)
	}
	if b := banner("/store/shop?error=address", "error"); !strings.Contains(b, "is not allowed: use an http://") {
		t.Errorf("after the session's own refused address the banner is %s; want the rule", b)
	}
	// Another login never sees this one's banners; and they end.
	other := u.login(t)
	if page := body(t, u.do(t, "GET", "/?answered=done", map[string]string{"Cookie": other})); !strings.Contains(page, `<p id="answered" class="banner ok" hidden>`) {
		t.Errorf("another login sees this one's confirmation")
	}
	u.clock.add(noticeTTL)
	hidden("/?answered=done", "answered")
}

// Screenshots, thumbnails, downloads and exports go only to the UI's own pages and the person's own
// navigation, never to a page of another port or site that would load them as its own.
func TestTaskFilesOnlyForTheUIsOwnPages(t *testing.T) {
	u, _ := taskUI(t)
	cookie := u.login(t)
	for _, path := range []string{"/task/" + task + "/shot/4", "/task/" + task + "/download/7", "/task/" + task + "/export"} {
		for _, site := range []string{"cross-site", "same-site"} {
			resp := u.do(t, "GET", path, map[string]string{"Cookie": cookie, "Sec-Fetch-Site": site})
			if b := body(t, resp); resp.StatusCode != http.StatusForbidden || !strings.Contains(b, "Sec-Fetch-Site: "+site) {
				t.Errorf("GET %s from a %s page = %d %q; want 403 naming the rule", path, site, resp.StatusCode, b)
			}
		}
		for _, site := range []string{"same-origin", "none", ""} {
			resp := u.do(t, "GET", path, map[string]string{"Cookie": cookie, "Sec-Fetch-Site": site})
			body(t, resp)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Cross-Origin-Resource-Policy") != "same-origin" {
				t.Errorf("GET %s, Sec-Fetch-Site %q = %d, CORP %q; want 200, same-origin", path, site, resp.StatusCode,
					resp.Header.Get("Cross-Origin-Resource-Policy"))
			}
		}
	}
}

// The takeover banner tells the truth: the agent reads what the person types there; a human tab, one
// button away, is the place for a password.
func TestTakeoverBannerOffersAHumanTab(t *testing.T) {
	u, _ := storeUI(t)
	cookie := u.login(t)
	page := body(t, u.do(t, "GET", "/store/shop/tab/T1", map[string]string{"Cookie": cookie}))
	i := strings.Index(page, `id="hold-you"`)
	if i < 0 {
		t.Fatalf("the agent's tab page has no takeover banner:\n%s", page)
	}
	b := page[i : i+strings.Index(page[i:], "</div>")]
	for _, want := range []string{"The agent can read what you type in this tab", "password or a one-time code",
		"no agent sees it", `action="store/shop/tabs"`, `name="url" id="human-url" value="https://shop.example/orders"`,
		"Open this page in a human tab"} {
		if !strings.Contains(b, want) {
			t.Errorf("the takeover banner lacks %q:\n%s", want, b)
		}
	}
}

// Serve decides a connection's user once, at its first request, and keeps the verdict for the others on it.
func TestPeerDecidedOncePerConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	asked := 0
	s := New(Config{Host: "127.0.0.1", Port: ln.Addr().(*net.TCPAddr).Port, Source: &fakeSource{}, Log: zerolog.Nop(),
		AllowUser: func(uid int) error {
			mu.Lock()
			defer mu.Unlock()
			asked++
			if uid != os.Getuid() {
				return fmt.Errorf("uid %d is not this process's", uid)
			}
			return nil
		}})
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for range 3 {
		resp, err := client.Get(s.URL() + "/assets/ui.css?x") // served to everyone: asks nothing
		if err != nil {
			t.Fatal(err)
		}
		body(t, resp)
		resp, err = client.Get(s.URL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		if body(t, resp); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET / by this process's user = %d; want 401 (served: a login is what it lacks)", resp.StatusCode)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if asked != 1 {
		t.Errorf("AllowUser was asked %d times over one kept-alive connection; want once", asked)
	}
}
