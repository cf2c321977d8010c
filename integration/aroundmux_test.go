//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/mux"
)

// aroundSite serves the pages an agent uses to reach past the mux: /p5.html (a tab whose URL holds a
// secret), /upload (a file input), /cookie (sets a cookie, so the profile has a cookie database).
func aroundSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/upload":
			fmt.Fprint(w, `<!doctype html><title>upload</title><input type="file" id="f">`)
		case "/cookie":
			http.SetCookie(w, &http.Cookie{Name: "login", Value: "bolt-secret", Expires: time.Now().Add(time.Hour)})
			fmt.Fprint(w, `<!doctype html><title>cookie</title>`)
		default:
			fmt.Fprintf(w, `<!doctype html><title>page</title><p>%s</p>`, r.URL.Path)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// readInput sets files on the page's #f through DOM.setFileInputFiles and returns what the page's
// FileReader reads from the first one, or the CDP error.
func readInput(c *rawCDP, session string, files ...string) (string, error) {
	var doc struct{ Root struct{ NodeID int } }
	c.must("DOM.getDocument", nil, session, &doc)
	var q struct{ NodeID int }
	c.must("DOM.querySelector", map[string]any{"nodeId": doc.Root.NodeID, "selector": "#f"}, session, &q)
	if _, err := c.Call("DOM.setFileInputFiles", map[string]any{"nodeId": q.NodeID, "files": files}, session); err != nil {
		return "", err
	}
	v, err := c.evaluate(session, `new Promise((resolve) => {
		const f = document.querySelector('#f').files[0];
		const r = new FileReader();
		r.onload = () => resolve(r.result);
		r.onerror = () => resolve('read error: ' + r.error);
		r.readAsText(f);
	})`)
	if err != nil {
		return "", err
	}
	var s string
	json.Unmarshal(v, &s)
	return s, nil
}

// wantRefused fails unless err is the mux's refusal naming rule (and, when set, what).
func wantRefused(t *testing.T, what string, err error, rule, named string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "refused by the mux") || !strings.Contains(err.Error(), rule) ||
		!strings.Contains(err.Error(), named) {
		t.Errorf("%s = %v; want the mux's refusal naming %q and %q", what, err, named, rule)
	}
}

// TestNothingAroundTheMuxFromInsideTheBrowser is SPEC §13's "nor through the browser itself", tried as a
// new user would, with raw CDP and puppeteer on one store's own mux URL while another task has a tab open:
// no browser pages, no local files, and nothing of the manager's home handed to a page.
func TestNothingAroundTheMuxFromInsideTheBrowser(t *testing.T) {
	t.Parallel()
	m := startManager(t, onPort)
	web := aroundSite(t)
	var acme, bolt api.Store
	if err := errors.Join(json.Unmarshal([]byte(m.cli("store", "add", "Acme", "--json")), &acme),
		json.Unmarshal([]byte(m.cli("store", "add", "Bolt", "--json")), &bolt)); err != nil {
		t.Fatal(err)
	}

	// Bolt logs in: its profile gets a cookie database, the file another store's agent is after.
	boltAgent := dialRaw(t, bolt.CDPWS+"/client-"+taskB)
	boltAgent.createPage(web.URL + "/cookie")
	cookies := filepath.Join(m.home, "profiles", bolt.Slug, "Default", "Cookies")
	testkit.WaitFor(t, 60*time.Second, "Bolt's cookie database on disk", func() bool {
		_, err := os.Stat(cookies)
		return err == nil
	})

	victim := dialRaw(t, acme.CDPWS+"/client-"+taskA)
	victim.createPage(web.URL + "/p5.html?secret=victim")
	evil := dialRaw(t, acme.CDPWS+"/client-evil")
	const urlRule, fileRule = "a client may open only web content", "a client may hand the browser only regular files"

	for _, u := range []string{"chrome://inspect/#pages", "chrome://history", "chrome://downloads",
		"devtools://devtools/bundled/inspector.html", "file:///etc/hostname", "view-source:chrome://version", "CHROME://inspect"} {
		_, err := evil.Call("Target.createTarget", map[string]any{"url": u}, "")
		wantRefused(t, "createTarget "+u, err, urlRule, u)
	}
	_, page := evil.createPage(web.URL + "/upload")
	for _, u := range []string{"chrome://inspect/#pages", "file:///etc/hostname", "devtools://devtools/bundled/inspector.html"} {
		_, err := evil.Call("Page.navigate", map[string]any{"url": u}, page)
		wantRefused(t, "Page.navigate "+u, err, urlRule, u)
	}

	// The page itself tries: Chrome keeps web content off browser pages and files, and the mux closes any
	// tab of a client's that lands there anyway. Both logs say the page got nowhere.
	evil.must("Log.enable", nil, page, nil)
	evil.evaluate(page, `location = 'chrome://inspect/#pages'`)
	testkit.WaitFor(t, 15*time.Second, "Chrome to refuse the page's own navigation", func() bool {
		for _, e := range evil.Events("Log.entryAdded") {
			if strings.Contains(string(e.Params), "Not allowed to load local resource: chrome://inspect") {
				return true
			}
		}
		return false
	})
	if v, err := evil.evaluate(page, `location.href`); err != nil || !strings.Contains(string(v), web.URL+"/upload") {
		t.Errorf("after location = chrome://inspect the page is at %s (%v); want it still at /upload", v, err)
	}
	for _, raw := range chromiumTargets(t, m, acme.Slug) {
		if strings.Contains(raw, "inspect") {
			t.Errorf("Chromium shows a target at %s; want none", raw)
		}
	}

	// Local files: the manager's home is off limits but for the client's own folder.
	link := filepath.Join(t.TempDir(), "innocent.txt")
	if err := os.Symlink(filepath.Join(m.home, "state.db"), link); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{cookies, filepath.Join(m.home, "state.db"), link} {
		_, err := readInput(evil, page, f)
		wantRefused(t, "setFileInputFiles "+f, err, fileRule, f)
	}
	own := filepath.Join(m.home, "downloads", acme.Slug, "evil")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(own, "report.csv")
	outside := filepath.Join(t.TempDir(), "upload.txt")
	if err := errors.Join(os.WriteFile(mine, []byte("own download"), 0o600),
		os.WriteFile(outside, []byte("agent's own file"), 0o600)); err != nil {
		t.Fatal(err)
	}
	for f, want := range map[string]string{mine: "own download", outside: "agent's own file"} {
		if got, err := readInput(evil, page, f); err != nil || got != want {
			t.Errorf("upload of %s read %q (%v); want %q", f, got, err, want)
		}
	}

	// puppeteer, as a new user's script would try it.
	node := exec.Command("node", filepath.Join("js", "around_mux_puppeteer.js"), acme.CDPWS, web.URL+"/upload",
		filepath.Join(m.home, "state.db"), outside)
	res, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("puppeteer: %v\n%s", err, res)
	}
	var got map[string]string
	if err := json.Unmarshal(lastLine(res), &got); err != nil {
		t.Fatalf("puppeteer printed %s: %v", res, err)
	}
	for _, k := range []string{"inspect", "file"} {
		if !strings.Contains(got[k], "refused by the mux") {
			t.Errorf("puppeteer page.goto (%s) = %q; want the mux's refusal", k, got[k])
		}
	}
	if !strings.Contains(got["refusedUpload"], "refused by the mux") || got["allowedUpload"] != "ok" || got["read"] != "agent's own file" {
		t.Errorf("puppeteer uploads = %v; want state.db refused and the agent's own file read", got)
	}

	// The victim's tab was never another client's to see, and is untouched.
	if ids := evil.targetIDs(false); len(ids) != 1 {
		t.Errorf("the evil client sees %d pages; want only its own", len(ids))
	}
}

// chromiumTargets lists the URLs of every target of a store's Chromium, from its own debugging port
// (past the mux).
func chromiumTargets(t *testing.T, m *managed, slug string) []string {
	t.Helper()
	port, err := os.ReadFile(filepath.Join(m.home, "profiles", slug, "DevToolsActivePort"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://127.0.0.1:" + strings.SplitN(string(port), "\n", 2)[0] + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct{ URL string }
	json.NewDecoder(resp.Body).Decode(&list)
	var urls []string
	for _, l := range list {
		urls = append(urls, l.URL)
	}
	return urls
}

// TestBrowserPagesStayThePersons: the rule is the clients', not the person's. A human tab opens chrome://version
// and stays open; an agent's tab whose load fails shows Chrome's error page and is not mistaken for one that
// reached a browser page.
func TestBrowserPagesStayThePersons(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{Home: t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	agent := dialRaw(t, m.WSBase+"/client-agent")
	failed, sess := agent.createPage("about:blank")
	agent.must("Page.enable", nil, sess, nil)
	agent.must("Page.navigate", map[string]any{"url": "http://127.0.0.1:1/"}, sess, nil)
	testkit.WaitFor(t, 15*time.Second, "the failed load's error page", func() bool {
		v, err := agent.evaluate(sess, `location.href`)
		return err == nil && strings.Contains(string(v), "chrome-error://chromewebdata/")
	})

	h, err := m.Operator().NewHumanTab(ctx, "chrome://version")
	if err != nil {
		t.Fatalf("NewHumanTab(chrome://version): %v", err)
	}
	v, err := m.Operator().View(ctx, h, mux.ViewOptions{})
	if err != nil {
		t.Fatalf("View(human tab): %v", err)
	}
	defer v.Close()
	testkit.WaitFor(t, 15*time.Second, "the human tab to show chrome://version", func() bool {
		_, url, err := m.Operator().PageInfo(ctx, h)
		return err == nil && url == "chrome://version/"
	})
	if err := v.Navigate(ctx, "chrome://settings"); err != nil {
		t.Errorf("human tab Navigate(chrome://settings): %v", err)
	}
	// One more round trip through the mux after every event above: the backstop has seen them all.
	agent.createPage("about:blank")
	present := map[string]bool{}
	resp, err := http.Get(chr.HTTP + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var list []struct{ ID string }
	json.NewDecoder(resp.Body).Decode(&list)
	for _, l := range list {
		present[l.ID] = true
	}
	if !present[h] || !present[failed] {
		t.Errorf("after the events went by: human tab there %v, failed agent tab there %v; want both", present[h], present[failed])
	}
}
