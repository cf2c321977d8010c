//go:build integration

package integration

import (
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

// TestWebUIFormsWorkInARealBrowser presses the store and tab pages' buttons that change something in a
// real Chromium: under the UI's no-referrer policy a form's own POST carries "Origin: null", which the UI
// refuses as cross-site, so each must arrive with the UI's own origin and do what it says.
func TestWebUIFormsWorkInARealBrowser(t *testing.T) {
	m := startManager(t)
	web := site(t)
	m.cli("store", "add", "Acme Shop")
	login := uiLogin(t, m)
	page := startNodeScript(t, "ui_forms.js", login.URL)
	page.expect("ready")
	own := "http://" + m.uiAddr
	// Selectors have no spaces: the script's commands are split on them.
	press := func(path, selector string, text ...string) map[string]any {
		t.Helper()
		page.send(strings.Join(append([]string{"press", path, selector}, text...), " "))
		got := page.expect("pressed")
		origins, _ := got["origins"].([]any)
		if len(origins) != 1 || origins[0] != own {
			t.Errorf("pressing %s on %s sent POSTs with Origin %v; want one with %s", selector, path, origins, own)
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
