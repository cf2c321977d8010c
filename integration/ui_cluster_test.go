//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// farPage is the agent's page on host3's store: one colour all over (the thumbnail's and the live view's
// pixels say whose page they show) and a field a person types into; what they type becomes the title.
const farPage = `<!doctype html><title>Far page</title>
<style>body{margin:0;background:rgb(240,200,40);font:16px sans-serif}
#in{position:absolute;left:60px;top:60px;width:300px;height:40px;font-size:20px}</style>
<input id="in" oninput="document.title='typed '+this.value">`

// paneShots is where the one-pane test keeps its screenshots for a person to look at.
var paneShots = filepath.Join(os.TempDir(), "pane-shots")

// paneShot screenshots the page as name in paneShots (and as keepScreenshot keeps it), and returns the
// script's report.
func paneShot(t *testing.T, page *nodeScript, name string) map[string]any {
	t.Helper()
	shot := filepath.Join(t.TempDir(), name)
	page.send("shot " + shot)
	got := page.expect("shot")
	png, err := os.ReadFile(shot)
	if err == nil {
		err = os.MkdirAll(paneShots, 0o755)
	}
	if err == nil {
		err = os.WriteFile(filepath.Join(paneShots, name), png, 0o644)
	}
	if err != nil {
		t.Errorf("keep the screenshot %s: %v", name, err)
	}
	t.Logf("screenshot: %s", filepath.Join(paneShots, name))
	keepScreenshot(t, shot, "cluster-"+name)
	return got
}

// SPEC §19 "One pane": host1's UI shows the whole cluster and a store of host3 as host3 runs it. Its
// overview lists the three hosts and the store with its host; the store's page, thumbnail, live view and
// takeover come from host3 through the door, and what the person does reaches host3's Chromium (the agent
// sees it, the mux and the timeline name the person of host1). Host1 applies its own access rules first: what
// it refuses never reaches host3. Once host3 is killed, host1's overview shows it unreachable at once and the
// store's page says so, with what to do, instead of waiting.
func TestUIClusterOnePane(t *testing.T) {
	ms := clusterOf(t, 3)
	h1, h3 := ms[0], ms[2]
	h1.cli("store", "add", "Far Shop", "--host", "host3")
	h1.cli("store", "add", "Near Shop", "--host", "host1")
	shop := storeNamedOn(t, h1, "Far Shop")
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, farPage)
	}))
	t.Cleanup(site.Close)

	// An agent of host1 opens a tab of host3's store through the door.
	agent := dialRaw(t, capability(t, h1, shop, taskA).CDPWS)
	tab, sess := agent.createPage(site.URL + "/far")
	if v, err := agent.evaluate(sess, "document.title"); err != nil || string(v) != `"Far page"` {
		t.Fatalf("the agent's page on host3: %s %v", v, err)
	}
	testkit.WaitFor(t, 10*time.Second, "host1's status to show Far Shop running on host3", func() bool {
		st, err := h1.client.Status(context.Background())
		if err != nil {
			return false
		}
		for _, b := range st.Browsers {
			if b.Key == shop.ID {
				return b.Host == "host3" && b.Status == api.StatusRunning && b.Tabs == 1
			}
		}
		return false
	})
	t.Logf("host1's status:\n%s", h1.cli("status"))

	login := uiLogin(t, h1)
	page := startNodeScript(t, "ui_pages.js", login.URL)
	page.expect("ready")
	page.send("hosts")
	ov := page.expect("hosts")
	wantHosts(t, ov, map[string]string{"host1": "live", "host2": "live", "host3": "live"})
	wantRow(t, ov, shop.Slug, "host3", "running")
	wantReadable(t, paneShot(t, page, "overview-hosts.png"), 1280)

	// host3's store page through host1: the agent's tab, its thumbnail's pixels the page's.
	page.send("store /store/" + shop.Slug + " " + tab + " 240,200,40")
	sp := page.expect("store")
	if got := rgbOf(sp["colour"]); !near(got, [3]int{240, 200, 40}) {
		t.Errorf("host1's thumbnail of host3's tab shows %v; want the page's yellow", got)
	}
	if !strings.Contains(fmt.Sprint(sp["clients"]), tab) || !strings.Contains(fmt.Sprint(sp["clients"]), taskA) {
		t.Errorf("host1's page of host3's store lists %v; want task %s with its tab %s", sp["clients"], taskA, tab)
	}
	wantReadable(t, paneShot(t, page, "store-through-host1.png"), 1280)

	// The takeover through host1: host3's mux holds the tab for the person (the agent is refused), their click
	// and keys reach host3's Chromium.
	page.send("tab /store/" + shop.Slug + "/tab/" + tab + " 240,200,40")
	if got := rgbOf(page.expect("tab")["colour"]); !near(got, [3]int{240, 200, 40}) {
		t.Fatalf("host1's live view of host3's tab shows %v", got)
	}
	page.send("hold")
	if held := page.expect("hold"); held["ok"] != true {
		t.Fatalf("Take over through host1 did not show the tab taken over: %v", held["text"])
	}
	if _, err := agent.evaluate(sess, "1"); !heldErr(err) {
		t.Fatalf("the agent's command on the tab host1's person holds: %v; want -32000 %q", err, "a person is controlling this tab")
	}
	if b := browserOf(t, h3, shop.ID); b.Held != 1 {
		t.Errorf("host3's status counts %d tabs taken over; want 1", b.Held)
	}
	page.send("click 200 80")
	if c := page.expect("clicked"); c["note"] != "" {
		t.Fatalf("the click through host1 was refused: %v", c["note"])
	}
	page.send("type from host1")
	page.expect("typed")
	page.send("title typed from host1")
	if got := page.expect("title")["text"]; got != "typed from host1" {
		t.Errorf("the live view's title after typing through host1 = %q; want the page's new title", got)
	}
	paneShot(t, page, "takeover-through-host1.png")
	page.send("release")
	if r := page.expect("release"); r["ok"] != true {
		t.Fatalf("Release through host1: %v", r["text"])
	}
	if v, err := agent.evaluate(sess, "document.getElementById('in').value"); err != nil || string(v) != `"from host1"` {
		t.Errorf("host3's page after the person of host1 typed: field %s, %v; want \"from host1\"", v, err)
	}
	wantTakeoverBy(t, h1, taskA, "@host1") // the task is host1's: its steps on host3's store go back to it

	attackRemoteStore(t, h1, h3, shop)

	// host3 dies: host1's overview shows it unreachable at once, and its store's page says so, with what to do.
	if err := h3.cmd.Process.Kill(); err != nil { // its manager and, inside it, its NATS node
		t.Fatal(err)
	}
	h3.cmd.Wait()
	killed := time.Now()
	page.send("hosts")
	ov = page.expect("hosts")
	wantHosts(t, ov, map[string]string{"host1": "live", "host2": "live", "host3": "unreachable"})
	wantRow(t, ov, shop.Slug, "host3", "host unreachable")
	if ms := ov["ms"].(float64); ms > 2500 {
		t.Errorf("host1's overview took %v ms to show its hosts with host3 dead; want about a second at most", ms)
	}
	t.Logf("host1's overview showed host3 unreachable %v ms after its load began, %s after the kill", ov["ms"],
		time.Since(killed).Round(time.Millisecond))
	wantReadable(t, paneShot(t, page, "overview-host3-unreachable.png"), 1280)
	page.send("page /store/" + shop.Slug)
	un := page.expect("page")
	text := un["text"].(string)
	for _, want := range []string{"Host host3 is unreachable", "Far Shop", "runs on host host3", "heartbeat",
		"moves to a live host", "vibe-browser status"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page of host3's store once host3 died says %q; want it to say %q", text, want)
		}
	}
	if un["status"] != float64(http.StatusServiceUnavailable) || un["ms"].(float64) > 2000 {
		t.Errorf("the page of host3's store once host3 died: %v in %v ms; want 503 within about a second", un["status"], un["ms"])
	}
	if d := time.Since(killed); d > 10*time.Second {
		t.Logf("the unreachable page was seen %s after the kill: the store may have moved meanwhile", d)
	}
	shot := paneShot(t, page, "store-host3-unreachable.png")
	if w := shot["scrollWidth"].(float64); w > 1280 {
		t.Errorf("the unreachable page is %v px wide at 1280 px", w)
	}
	for _, p := range shot["problems"].([]any) {
		if !strings.Contains(p.(string), "503") { // the browser's own note of the page's status
			t.Errorf("the unreachable page logged %q", p)
		}
	}
	page.send("close")
	page.expect("closed")
}

func wantHosts(t *testing.T, ov map[string]any, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, h := range ov["hosts"].([]any) {
		m := h.(map[string]any)
		got[m["name"].(string)] = m["state"].(string)
		if m["state"] == "unreachable" && !strings.Contains(m["text"].(string), "vibe-browser status on "+m["name"].(string)) {
			t.Errorf("host %v's card says %q; want what to do", m["name"], m["text"])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("host1's overview shows the hosts %v; want %v", got, want)
	}
}

func wantRow(t *testing.T, ov map[string]any, slug, host, status string) {
	t.Helper()
	for _, r := range ov["rows"].([]any) {
		m := r.(map[string]any)
		if m["slug"] == slug {
			if m["host"] != host || m["status"] != status {
				t.Errorf("host1's overview row of %s: host %v, browser %v; want %s, %s", slug, m["host"], m["status"], host, status)
			}
			return
		}
	}
	t.Errorf("host1's overview has no row of %s: %v", slug, ov["rows"])
}

// wantTakeoverBy checks that task's timeline on m, its host, has a takeover by someone whose name ends in
// suffix: the steps of its tab, on another host's store, come back to the task's host.
func wantTakeoverBy(t *testing.T, m *managed, task, suffix string) {
	t.Helper()
	var by []string
	testkit.WaitFor(t, 10*time.Second, hostOf(m)+"'s timeline of the task to record the takeover of host1's person", func() bool {
		by = nil
		for _, e := range m.timeline(task).Entries {
			if e.Takeover != nil && e.Takeover.Event == api.TakeoverTook {
				by = append(by, e.Takeover.By)
			}
		}
		return len(by) > 0
	})
	if !strings.HasSuffix(by[0], suffix) {
		t.Errorf("%s's timeline says the tab was taken by %q; want the person of host1, ...%s", hostOf(m), by, suffix)
	}
	t.Logf("%s's timeline: the tab was taken by %q", hostOf(m), by)
}

// attackRemoteStore sends host1's UI requests for host3's store that its rules refuse (no session, a foreign
// Origin, a form without its token) and checks that none reached host3 (no human tab opened there), while
// the same form with its token does.
func attackRemoteStore(t *testing.T, h1, h3 *managed, shop api.Store) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(uiLogin(t, h1).URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		cookie = c
	}
	if cookie == nil {
		t.Fatal("the login set no cookie")
	}
	base := "http://" + h1.uiAddr + cookie.Path
	do := func(method, path, form string, hdr map[string]string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(form))
		if form != "" {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range hdr {
			if k == "Cookie" {
				req.AddCookie(cookie)
				continue
			}
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	_, storePage := do("GET", "/store/"+shop.Slug, "", map[string]string{"Cookie": "", "Accept": "text/html"})
	m := regexp.MustCompile(`name="form_token" value="([0-9a-f]{64})"`).FindStringSubmatch(storePage)
	if m == nil {
		t.Fatalf("host1's page of host3's store carries no form token:\n%s", storePage)
	}
	token := m[1]
	tabsOn3 := func() int { return browserOf(t, h3, shop.ID).Tabs }
	before := tabsOn3()
	form := "url=" + url.QueryEscape("https://example.com/")
	for _, tt := range []struct {
		name string
		form string
		hdr  map[string]string
		want int
	}{
		{"no session", form + "&form_token=" + token, map[string]string{"Origin": "http://" + h1.uiAddr}, http.StatusUnauthorized},
		{"a foreign Origin", form + "&form_token=" + token, map[string]string{"Cookie": "", "Origin": "http://evil.example"}, http.StatusForbidden},
		{"no form token", form, map[string]string{"Cookie": "", "Origin": "null"}, http.StatusForbidden},
	} {
		if code, b := do("POST", "/store/"+shop.Slug+"/tabs", tt.form, tt.hdr); code != tt.want {
			t.Errorf("a new tab on host3's store through host1 with %s = %d %q; want %d", tt.name, code, b, tt.want)
		}
	}
	if after := tabsOn3(); after != before {
		t.Errorf("host3's browser has %d tabs after host1 refused three forms; want %d: a refused form reached host3", after, before)
	}
	if code, b := do("POST", "/store/"+shop.Slug+"/tabs", form+"&form_token="+token, map[string]string{"Cookie": "", "Origin": "null"}); code != http.StatusSeeOther {
		t.Fatalf("a new tab on host3's store through host1 with its token = %d %q; want 303 to the tab", code, b)
	}
	testkit.WaitFor(t, 10*time.Second, "the person's human tab to open on host3", func() bool { return tabsOn3() == before+1 })
}
