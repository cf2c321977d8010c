//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// signInPage is a login form whose own script records what reaches it: the field's value after each
// input, and the value at submit. The field and button sit at fixed CSS pixels so the test can click them
// on the live view's picture.
const signInPage = `<!doctype html><title>Sign in</title>
<style>body{margin:0;background:#fff;font:16px sans-serif} #user{position:absolute;left:40px;top:40px;width:300px;height:40px;font-size:20px}
#go{position:absolute;left:40px;top:120px;width:200px;height:50px}</style>
<form id="f"><input id="user" autocomplete="off"><button id="go" type="submit">Sign in</button></form>
<script>
window.recorded = {input: [], keys: [], focus: [], submitted: null};
document.addEventListener('keydown', (e) => window.recorded.keys.push(e.key));
document.addEventListener('focusin', (e) => window.recorded.focus.push(e.target.id));
document.addEventListener('mousedown', (e) => window.recorded.focus.push('down ' + e.clientX + ',' + e.clientY + ' ' + e.target.id));
document.getElementById('user').addEventListener('input', (e) => window.recorded.input.push(e.target.value));
document.getElementById('f').addEventListener('submit', (e) => {
  e.preventDefault();
  window.recorded.submitted = document.getElementById('user').value;
  document.title = 'Signed in';
});
</script>`

// devtoolsTarget returns the page-level DevTools WebSocket of a target of the store's Chromium, past the mux.
func (m *managed) devtoolsTarget(slug, targetID string) string {
	m.t.Helper()
	for _, tg := range m.chromiumTargets(slug) {
		if tg.ID == targetID {
			return tg.WebSocketDebuggerURL
		}
	}
	m.t.Fatalf("Chromium of %s has no target %s", slug, targetID)
	return ""
}

// shootAtBothWidths screenshots the page at 1280 px (kept by keepScreenshot, for the README)
// and at a 1024 px laptop width, checking both read without sideways scrolling.
func shootAtBothWidths(t *testing.T, page *nodeScript, name, what string) {
	t.Helper()
	shot := filepath.Join(t.TempDir(), name+".png")
	page.send("shot " + shot)
	wantReadable(t, page.expect("shot"), 1280)
	t.Logf("%s screenshot: %s", what, shot)
	keepScreenshot(t, shot, name+".png")
	page.send("viewport 1024 700")
	page.expect("viewport")
	page.send("shot " + filepath.Join(t.TempDir(), name+"-1024.png"))
	wantReadable(t, page.expect("shot"), 1024)
	page.send("viewport 1280 800")
	page.expect("viewport")
}

func TestWebUIStoreAndTabPages(t *testing.T) {
	t.Parallel()
	m := startManager(t, onPort)
	m.cli("store", "add", "Acme Shop")
	m.cli("store", "add", "Bolt Store")
	m.cli("browser", "start", "acme-shop")
	m.cli("task", "set", taskA, "--store", "acme-shop", "--status", "running")
	signIn := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		if r.URL.Path == "/next" {
			fmt.Fprint(w, "<!doctype html><title>Next page</title><p>signed in</p>")
			return
		}
		fmt.Fprint(w, signInPage)
	}))
	t.Cleanup(signIn.Close)

	// An agent's tab of one known colour.
	teal := [3]int{20, 160, 220}
	agent := dialRaw(t, m.storeWS("acme-shop", taskA))
	agent.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	var ct struct{ TargetID string }
	agent.must("Target.createTarget", map[string]any{"background": true,
		"url": "data:text/html,<title>Teal</title><body style='margin:0;background:rgb(20,160,220)'></body>"}, "", &ct)
	colour := fmt.Sprintf("%d,%d,%d", teal[0], teal[1], teal[2])
	// And a report it downloaded, which the store page lists under its task.
	dlSite := downloadSite(t)
	var dt struct{ TargetID string }
	agent.must("Target.createTarget", map[string]any{"background": true, "url": dlSite.URL + "/?who=agent"}, "", &dt)
	var da struct{ SessionID string }
	agent.must("Target.attachToTarget", map[string]any{"targetId": dt.TargetID, "flatten": true}, "", &da)
	testkit.WaitFor(t, 15*time.Second, "the download page loaded", func() bool {
		v, err := agent.evaluate(da.SessionID, `document.readyState === "complete" && !!document.getElementById("dl")`)
		return err == nil && string(v) == "true"
	})
	clickIn(t, agent, da.SessionID, "dl")
	testkit.WaitFor(t, 15*time.Second, "the agent's download recorded", func() bool {
		ds, err := m.client.ListDownloads(context.Background(), taskA, "")
		return err == nil && len(ds) == 1
	})
	// Its tab goes: a second background tab's thumbnail is not what this test looks at, and Chromium may
	// composite none for it in time.
	agent.must("Target.closeTarget", map[string]any{"targetId": dt.TargetID}, "", nil)

	login := uiLogin(t, m)
	page := startNodeScript(t, "ui_pages.js", login.URL)
	page.expect("ready")

	// The store page: the agent's client labelled as its task, the human client, the thumbnail's pixels.
	page.send("store /store/acme-shop " + ct.TargetID + " " + colour)
	store := page.expect("store")
	if got := rgbOf(store["colour"]); !near(got, teal) {
		t.Errorf("the store page's thumbnail of %s shows %v; want the page's colour %v", ct.TargetID, got, teal)
	}
	var clients []struct {
		ID, Kind string
		Tabs     []string
	}
	raw, _ := json.Marshal(store["clients"])
	json.Unmarshal(raw, &clients)
	kinds := map[string]string{}
	for _, c := range clients {
		kinds[c.ID] = c.Kind
		if c.ID == taskA && !slices.Contains(c.Tabs, ct.TargetID) {
			t.Errorf("client %s lists tabs %q; want its tab %s", c.ID, c.Tabs, ct.TargetID)
		}
	}
	if kinds[taskA] != "task" || kinds["human"] != "human" {
		t.Errorf("store page clients %v; want %s as a task and the human client", kinds, taskA)
	}
	var downloads []struct {
		Owner string
		Files []string
	}
	raw, _ = json.Marshal(store["downloads"])
	json.Unmarshal(raw, &downloads)
	if len(downloads) != 1 || downloads[0].Owner != taskA || !slices.Equal(downloads[0].Files, []string{"report.csv"}) {
		t.Errorf("store page downloads %+v; want the agent's report.csv under its task", downloads)
	}
	shootAtBothWidths(t, page, "store", "store page")

	// The agent's tab: the live view shows its pixels and offers a takeover; watching it counts a viewer.
	tabPath := "/store/acme-shop/tab/" + ct.TargetID
	page.send("tab " + tabPath + " " + colour)
	tab := page.expect("tab")
	if got := rgbOf(tab["colour"]); !near(got, teal) {
		t.Errorf("the live view of %s shows %v; want %v", ct.TargetID, got, teal)
	}
	if text := tab["text"].(string); !strings.Contains(text, "you are watching it") || strings.Contains(text, "⟳") {
		t.Errorf("the agent's tab page says %q; want it to say you are watching, with no address bar until you take over", text)
	}
	shot := filepath.Join(t.TempDir(), "tab.png")
	page.send("shot " + shot)
	wantReadable(t, page.expect("shot"), 1280)
	t.Logf("agent tab screenshot: %s", shot)
	keepScreenshot(t, shot, "tab.png")
	page.send("viewers /store/acme-shop 1")
	if n := page.expect("viewers")["n"]; n != float64(1) {
		t.Errorf("the store page counts %v viewers while the tab page is open; want 1", n)
	}
	page.send("leave")
	page.expect("left")
	page.send("viewers /store/acme-shop 0")
	if n := page.expect("viewers")["n"]; n != float64(0) {
		t.Errorf("the store page counts %v viewers after the viewer left; want 0 (the screencast stopped)", n)
	}

	// store login: a human tab at the sign-in page, and a link that lands on its live view. A store page
	// open meanwhile lists the new tab within liveWithin.
	page.send("watch-store /store/acme-shop")
	page.expect("watching")
	var sl api.StoreLogin
	if err := json.Unmarshal([]byte(m.cli("store", "login", "acme-shop", "--url", signIn.URL, "--json")), &sl); err != nil {
		t.Fatal(err)
	}
	opened := time.Now()
	page.send("wait-tab " + sl.Tab)
	page.expect("listed")
	if took := time.Since(opened); took > liveWithin {
		t.Errorf("the open store page listed the human tab after %v; want within %v", took, liveWithin)
	}
	if sl.Store != "acme-shop" || sl.Tab == "" || !strings.Contains(sl.URL, "next=") {
		t.Fatalf("store login --json = %+v; want the store, the tab and a link with next", sl)
	}
	page.send("login " + sl.URL)
	landed := page.expect("login")
	if want := "http://" + m.uiAddr + "/store/acme-shop/tab/" + sl.Tab; landed["url"] != want || landed["status"] != float64(200) {
		t.Errorf("the store login link landed on %v (%v); want %s", landed["url"], landed["status"], want)
	}
	page.send("click 190 60") // the field
	page.expect("clicked")
	page.send("type hello person")
	page.expect("typed")
	page.send("click 140 145") // the button
	page.expect("clicked")
	human := dialRaw(t, m.devtoolsTarget("acme-shop", sl.Tab))
	var rec struct {
		Input, Keys, Focus []string
		Submitted          *string
	}
	testkit.WaitFor(t, 15*time.Second, "the sign-in page records the submit", func() bool {
		v, err := human.evaluate("", "window.recorded")
		return err == nil && json.Unmarshal(v, &rec) == nil && rec.Submitted != nil
	})
	if *rec.Submitted != "hello person" || len(rec.Input) == 0 || rec.Input[len(rec.Input)-1] != "hello person" {
		t.Errorf("the sign-in page recorded input %q, keys %q, focus %q, submit %q; want input up to and a submit of %q",
			rec.Input, rec.Keys, rec.Focus, *rec.Submitted, "hello person")
	}
	page.send("title Signed in") // set by the page's script, not by a navigation
	if got := page.expect("title")["text"]; got != "Signed in" {
		t.Errorf("the tab page's title is %q after the page set its own; want it live: %q", got, "Signed in")
	}
	shootAtBothWidths(t, page, "login", "human tab")

	// The address bar navigates the human tab; the page's title and address follow it.
	page.send("navigate " + signIn.URL + "/next Next page")
	nav := page.expect("navigated")
	if nav["title"] != "Next page" || nav["address"] != signIn.URL+"/next" {
		t.Errorf("after navigating to /next the tab page shows title %q, address %q; want %q and %s",
			nav["title"], nav["address"], "Next page", signIn.URL+"/next")
	}

	// The agent never sees the human tab: not in getTargets, not in any event.
	if ids := agent.targetIDs(true); slices.Contains(ids, sl.Tab) {
		t.Errorf("the agent's getTargets lists the human tab %s: %q", sl.Tab, ids)
	}
	for _, ev := range agent.Events("") {
		if strings.Contains(string(ev.Params), sl.Tab) {
			t.Errorf("the agent got %s about the human tab: %s", ev.Method, ev.Params)
		}
	}
	page.send("close")
	page.expect("closed")
	page.wait()
}

// wantReadable checks a page's screenshot report: no sideways scrolling at width, no script or CSP errors.
func wantReadable(t *testing.T, shot map[string]any, width float64) {
	t.Helper()
	if w := shot["scrollWidth"].(float64); w > width {
		t.Errorf("the page is %v px wide at a %v px viewport; want no horizontal overflow", w, width)
	}
	if p := shot["problems"].([]any); len(p) > 0 {
		t.Errorf("the page logged errors (a CSP violation, a script error): %q", p)
	}
}

func rgbOf(v any) [3]int {
	var c [3]int
	if a, ok := v.([]any); ok && len(a) == 3 {
		for i := range c {
			c[i] = int(a[i].(float64))
		}
	}
	return c
}
