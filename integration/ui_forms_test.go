//go:build integration

package integration

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

// TestWebUIFormsWorkInARealBrowser presses the store and tab pages' buttons that change something in a
// real Chromium. They are plain forms: under the UI's no-referrer policy their POSTs carry "Origin: null",
// and the browser's Sec-Fetch-Site: same-origin is what the UI accepts them by; each must do what it says.
// The same form on a page of another port of this host (same-site) is refused, whether its Origin is its
// own or "null"; it carries no session cookie either, which goes only to its own session's path.
func TestWebUIFormsWorkInARealBrowser(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	web := site(t)
	m.cli("store", "add", "Acme Shop")
	login := uiLogin(t, m)
	page := startNodeScript(t, "ui_forms.js", login.URL)
	page.expect("ready")
	own := "http://" + m.uiAddr

	for _, policy := range []string{"no-referrer", "strict-origin-when-cross-origin"} {
		forger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Referrer-Policy", policy)
			fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/store/acme-shop/start"><button id="go">win a prize</button></form>`, own)
		}))
		t.Cleanup(forger.Close)
		page.send("forge " + forger.URL)
		got := page.expect("forged")
		posts, _ := got["posts"].([]any)
		if got["status"] != float64(403) || !strings.Contains(got["text"].(string), "forbidden") || len(posts) != 1 ||
			posts[0].(map[string]any)["site"] != "same-site" || posts[0].(map[string]any)["cookie"] != false {
			t.Errorf("a form of %s (Referrer-Policy %s) posting to the UI: %v; want one same-site POST without the session cookie, "+
				"refused with 403", forger.URL, policy, got)
		}
	}
	if st, err := m.client.GetStore(t.Context(), "acme-shop"); err != nil || st.Browser.Status == api.StatusRunning {
		t.Fatalf("after the forged forms the store is %+v, %v; want its browser not started", st.Browser, err)
	}

	// Selectors have no spaces: the script's commands are split on them.
	press := func(path, selector string, text ...string) map[string]any {
		t.Helper()
		page.send(strings.Join(append([]string{"press", path, selector}, text...), " "))
		got := page.expect("pressed")
		posts, _ := got["posts"].([]any)
		if len(posts) != 1 || posts[0].(map[string]any)["site"] != "same-origin" ||
			(posts[0].(map[string]any)["origin"] != own && posts[0].(map[string]any)["origin"] != "null") {
			t.Errorf("pressing %s on %s sent POSTs %v; want one, same-origin by its Sec-Fetch-Site, from %s or null",
				selector, path, posts, own)
		}
		if got["banner"] != "" || len(got["problems"].([]any)) > 0 {
			t.Errorf("pressing %s on %s: error %q, script errors %v", selector, path, got["banner"], got["problems"])
		}
		return got
	}

	tab := pressStartAndNewTab(t, m, own, web.URL+"/login", press)
	if got := press("/store/acme-shop/tab/"+tab, "form[action$='/close']>button"); got["url"] != own+"/store/acme-shop" {
		t.Errorf("Close tab ended on %v; want the store page", got["url"])
	}
	page.send("close")
	page.expect("closed")
	page.wait()
}

// TestWebUIFormsWorkOverPlainHTTPOnTheNetwork presses the same buttons in a real Chromium with the UI on
// a non-loopback address of this machine over plain HTTP (VIBE_UI_ALLOW_REMOTE=1). Browsers send no Fetch
// Metadata there, so each form's POST says only "Origin: null": its token of the session is what the UI
// takes it by. A form on a page of another port of the same address (same-site: neither Origin nor Fetch
// Metadata tells it from ours) and one of another site are refused; neither carries the session's cookie,
// which goes only to its own session's path.
func TestWebUIFormsWorkOverPlainHTTPOnTheNetwork(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIP(t)
	addr := net.JoinHostPort(ip, freePort(t, ip))
	m := startManager(t, "VIBE_UI_ADDR="+addr, "VIBE_UI_ALLOW_REMOTE=1")
	m.uiAddr = addr
	web := site(t)
	m.cli("store", "add", "Acme Shop")
	login := uiLogin(t, m)
	own := "http://" + addr
	if !strings.HasPrefix(login.URL, own+"/login?code=") {
		t.Fatalf("ui --json URL %q; want one on %s", login.URL, own)
	}
	page := startNodeScript(t, "ui_forms.js", login.URL)
	page.expect("ready")

	sameSite := httptest.NewUnstartedServer(nil)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	sameSite.Listener.Close()
	sameSite.Listener = ln
	crossSite := httptest.NewUnstartedServer(nil)
	for _, forger := range []*httptest.Server{sameSite, crossSite} {
		forger.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.Header().Set("Referrer-Policy", r.URL.Query().Get("policy"))
			// A guessed token changes nothing.
			fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/store/acme-shop/start">`+
				`<input type="hidden" name="form_token" value="0123456789abcdef"><button id="go">win a prize</button></form>`, own)
		})
		forger.Start()
		t.Cleanup(forger.Close)
	}
	for _, tt := range []struct {
		forger *httptest.Server
		cookie bool // whether the session cookie went with the form
	}{{sameSite, false}, {crossSite, false}} {
		for _, policy := range []string{"no-referrer", "strict-origin-when-cross-origin"} {
			page.send("forge " + tt.forger.URL + "/?policy=" + policy)
			got := page.expect("forged")
			posts, _ := got["posts"].([]any)
			if got["status"] != float64(403) || !strings.Contains(got["text"].(string), "forbidden") || len(posts) != 1 ||
				posts[0].(map[string]any)["site"] != nil || posts[0].(map[string]any)["cookie"] != tt.cookie {
				t.Errorf("a form of %s (Referrer-Policy %s) posting to the UI: %v; want one POST without Sec-Fetch-Site, "+
					"the cookie sent: %v, refused with 403", tt.forger.URL, policy, got, tt.cookie)
			}
		}
	}
	if st, err := m.client.GetStore(t.Context(), "acme-shop"); err != nil || st.Browser.Status == api.StatusRunning {
		t.Fatalf("after the forged forms the store is %+v, %v; want its browser not started", st.Browser, err)
	}

	press := func(path, selector string, text ...string) map[string]any {
		t.Helper()
		page.send(strings.Join(append([]string{"press", path, selector}, text...), " "))
		got := page.expect("pressed")
		posts, _ := got["posts"].([]any)
		if len(posts) != 1 || posts[0].(map[string]any)["site"] != nil || posts[0].(map[string]any)["origin"] != "null" {
			t.Errorf("pressing %s on %s sent POSTs %v; want one, from Origin null without Sec-Fetch-Site "+
				"(what the form's token is for)", selector, path, posts)
		}
		if got["banner"] != "" || len(got["problems"].([]any)) > 0 {
			t.Errorf("pressing %s on %s: error %q, script errors %v", selector, path, got["banner"], got["problems"])
		}
		return got
	}
	tab := pressStartAndNewTab(t, m, own, web.URL+"/login", press)
	shot := filepath.Join(t.TempDir(), "remote-tab.png")
	page.send("screenshot " + shot)
	if sc := page.expect("screenshot"); len(sc["problems"].([]any)) > 0 {
		t.Errorf("the human tab's page over %s: script errors %v", own, sc["problems"])
	}
	keepScreenshot(t, shot, "remote-tab.png")
	if got := press("/store/acme-shop/tab/"+tab, "form[action$='/close']>button"); got["url"] != own+"/store/acme-shop" {
		t.Errorf("Close tab ended on %v; want the store page", got["url"])
	}
	if strings.Contains(m.log.String(), "form_token") {
		t.Errorf("the manager's log names the form token")
	}
	page.send("close")
	page.expect("closed")
	page.wait()
}

// pressStartAndNewTab presses Start the browser on acme-shop's store page and checks that its browser runs,
// then New human tab with address url; it returns the new tab's id.
func pressStartAndNewTab(t *testing.T, m *managed, own, url string, press func(path, selector string, text ...string) map[string]any) string {
	t.Helper()
	if got := press("/store/acme-shop", "#stopped>form>button"); got["url"] != own+"/store/acme-shop" {
		t.Errorf("Start the browser ended on %v; want the store page", got["url"])
	}
	if st, err := m.client.GetStore(t.Context(), "acme-shop"); err != nil || st.Browser.Status != api.StatusRunning {
		t.Fatalf("after Start the store is %+v, %v; want its browser running", st.Browser, err)
	}
	got := press("/store/acme-shop", "#human-form>form>button", "#human-form>form>input[name=url]", url)
	tab, ok := strings.CutPrefix(got["url"].(string), own+"/store/acme-shop/tab/")
	if !ok || tab == "" {
		t.Fatalf("New human tab ended on %v; want the new tab's page", got["url"])
	}
	return tab
}

// nonLoopbackIP is an IPv4 address of this machine other than a loopback or link-local one; the test
// is skipped on a machine that has none.
func nonLoopbackIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Skipf("this machine has no non-loopback IPv4 address (interface addresses: %v) to serve the web UI on over plain HTTP", addrs)
	return ""
}

// freePort is a TCP port free on ip just now.
func freePort(t *testing.T, ip string) string {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}
