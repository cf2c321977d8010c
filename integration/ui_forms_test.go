//go:build integration

package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

// TestWebUIFormsWorkInARealBrowser presses the store and tab pages' buttons that change something in a
// real Chromium. They are plain forms: under the UI's no-referrer policy their POSTs carry "Origin: null",
// and the browser's Sec-Fetch-Site: same-origin is what the UI accepts them by; each must do what it says.
// The same form on a page of another port of this host (same-site: the session cookie goes with it) is
// refused, whether its Origin is its own or "null".
func TestWebUIFormsWorkInARealBrowser(t *testing.T) {
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
			posts[0].(map[string]any)["site"] != "same-site" {
			t.Errorf("a form of %s (Referrer-Policy %s) posting to the UI: %v; want one same-site POST, refused with 403",
				forger.URL, policy, got)
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

	if got := press("/store/acme-shop", "#stopped>form>button"); got["url"] != own+"/store/acme-shop" {
		t.Errorf("Start the browser ended on %v; want the store page", got["url"])
	}
	if st, err := m.client.GetStore(t.Context(), "acme-shop"); err != nil || st.Browser.Status != api.StatusRunning {
		t.Fatalf("after Start the store is %+v, %v; want its browser running", st.Browser, err)
	}
	got := press("/store/acme-shop", "#human-form>form>button", "#human-form>form>input[name=url]", web.URL+"/login")
	tab, ok := strings.CutPrefix(got["url"].(string), own+"/store/acme-shop/tab/")
	if !ok || tab == "" {
		t.Fatalf("New human tab ended on %v; want the new tab's page", got["url"])
	}
	if got := press("/store/acme-shop/tab/"+tab, "form[action$='/close']>button"); got["url"] != own+"/store/acme-shop" {
		t.Errorf("Close tab ended on %v; want the store page", got["url"])
	}
	page.send("close")
	page.expect("closed")
	page.wait()
}
