//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/jpeg"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// The colours of the timeline site's pages, as their shots must show them.
var pageColours = map[string][3]int{"red": {220, 40, 40}, "green": {40, 170, 70}, "blue": {40, 80, 220}}

// timelineSite serves pages of one colour each (/red, /green, /blue), a login form (/login) and a page that
// writes down what it sees of its own visibility, focus and size (/watch).
func timelineSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		name := strings.Trim(r.URL.Path, "/")
		switch {
		case name == "login":
			fmt.Fprint(w, `<!doctype html><title>login</title><body style="background:#fff">
<input id="user" value="seller"><input id="pw" type="password"></body>`)
		case name == "watch":
			fmt.Fprint(w, `<!doctype html><title>watch</title><body style="margin:0;background:rgb(40,80,220)"><script>
window.__seen = [];
for (const ev of ['visibilitychange', 'focus', 'blur', 'resize']) {
  (ev === 'visibilitychange' ? document : window).addEventListener(ev, () => window.__seen.push(ev));
}</script></body>`)
		default:
			c, ok := pageColours[name]
			if !ok {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `<!doctype html><title>page %s</title><body style="margin:0;background:rgb(%d,%d,%d)"></body>`,
				name, c[0], c[1], c[2])
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// timeline is task's whole timeline, as `task log --json` prints it.
func (m *managed) timeline(task string) api.Timeline {
	m.t.Helper()
	var tl api.Timeline
	if err := json.Unmarshal([]byte(m.cli("task", "log", task, "--json")), &tl); err != nil {
		m.t.Fatal(err)
	}
	return tl
}

// shotColour is the colour at the middle of shot entry seq's JPEG.
func (m *managed) shotColour(task string, seq int64) [3]int {
	m.t.Helper()
	b, err := m.client.Raw(context.Background(), fmt.Sprintf("/v1/tasks/%s/timeline/%d/shot", task, seq))
	if err != nil {
		m.t.Fatal(err)
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		m.t.Fatal(err)
	}
	r, g, bl, _ := img.At(img.Bounds().Dx()/2, img.Bounds().Dy()/2).RGBA()
	return [3]int{int(r >> 8), int(g >> 8), int(bl >> 8)}
}

// TestTimelineOfATask: three calls of a task through the real shim (one exiting 3, one typing a password)
// and one of its --worker 2 slot, a download, a handoff answered and a takeover: the timeline holds each in
// order, with the code, status and output of the calls, the worker marked, shots showing each page's colour,
// the navigations, and never the password; the page photographed sees nothing of it; `task log`, the UI's
// task page and the exported file (opened with the network off) show it all.
func TestTimelineOfATask(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	site := timelineSite(t)
	dl := downloadSite(t)
	store := m.addStore("Time Shop")
	env := "--store " + store.Slug + " --task " + taskA
	const secret = "s3cret-Pw-42"

	// A page of the task's own client (the timeline photographs every tab of the call's client) notes any
	// change of its visibility, focus or size. Its connection is the task's until the first call's takes
	// the client id over; the tab stays the task's.
	// It opens in the background, as an agent's tabs do: a tab in front gets the window's focus events
	// whenever another opens or closes, which would hide what the shots do.
	watchTarget, _ := dialRaw(t, m.storeWS(store.Slug, taskA)).createBackgroundPage(site.URL + "/watch")

	out := m.mustAgent(env, "browser-use <<'PY'\nopen "+site.URL+"/red\neval document.title\nPY")
	if !strings.Contains(out, `"page red"`) {
		t.Fatalf("call 1 printed %q", out)
	}
	out = m.mustAgent(env, "FAKEBU_EXIT=3 browser-use <<'PY' || echo \"exit $?\"\nopen "+site.URL+"/green\neval document.title\nPY")
	if !strings.Contains(out, "exit 3") {
		t.Fatalf("call 2 printed %q; want its exit 3", out)
	}
	m.mustAgent(env, "browser-use <<'PY'\nopen "+site.URL+"/login\neval document.getElementById('pw').focus(), 1\ntype "+secret+
		"\neval document.getElementById('user').focus(), 1\ntype plain-name\neval document.getElementById('pw').value.length\nPY")
	m.mustAgent(env, "browser-use --worker 2 <<'PY'\nopen "+site.URL+"/blue\neval document.title\nPY")
	// The page photographed after call 1 saw nothing of it (checked before the takeover, which brings
	// another tab to the front).
	testkit.WaitFor(t, 10*time.Second, "the shot of the /watch page", func() bool {
		for _, e := range m.timeline(taskA).Entries {
			if e.Shot != nil && strings.HasSuffix(e.Shot.URL, "/watch") {
				return true
			}
		}
		return false
	})
	watcher := dialRaw(t, m.storeWS(store.Slug, taskA)) // the task's client again, between its calls
	var at struct{ SessionID string }
	watcher.must("Target.attachToTarget", map[string]any{"targetId": watchTarget, "flatten": true}, "", &at)
	if seen, err := watcher.evaluate(at.SessionID, "JSON.stringify(window.__seen)"); err != nil || string(seen) != `"[]"` {
		t.Errorf("the photographed page saw %s (%v); want nothing", seen, err)
	}
	m.mustAgent(env, "browser-use <<'PY'\nopen "+dl.URL+"/?who=agent\neval document.getElementById('dl').click(), 1\nwaitfile report.csv\nPY")

	asking := m.askHuman(store.Slug, taskA, "--ask-human", "please solve the captcha", "--wait", "60")
	h := m.pending(store.Slug + "-" + taskA[:8])
	if _, err := m.client.AnswerHandoff(context.Background(), h.ID, api.HandoffAnswer{Status: api.HandoffDone, Note: "solved it"}); err != nil {
		t.Fatal(err)
	}
	if code := asking.exit(t, 10*time.Second); code != 0 {
		t.Fatalf("--ask-human exited %d", code)
	}

	// A person takes over the red tab in the UI and gives it back.
	var red string
	testkit.WaitFor(t, 10*time.Second, "the red page's navigation in the timeline", func() bool {
		for _, e := range m.timeline(taskA).Entries {
			if e.Nav != nil && strings.HasSuffix(e.Nav.URL, "/red") {
				red = e.Nav.Tab
			}
		}
		return red != ""
	})
	login := uiLogin(t, m)
	page := startNodeScript(t, "ui_pages.js", login.URL)
	page.expect("ready")
	page.send("tab /store/" + store.Slug + "/tab/" + red + " 220,40,40")
	page.expect("tab")
	page.send("hold")
	if held := page.expect("hold"); held["ok"] != true {
		t.Fatalf("Take over: %v", held)
	}
	page.send("release")
	page.expect("release")
	page.send("close")
	page.wait()

	var tl api.Timeline
	testkit.WaitFor(t, 15*time.Second, "the takeover's release in the timeline", func() bool {
		tl = m.timeline(taskA)
		for _, e := range tl.Entries {
			if e.Takeover != nil && e.Takeover.Event == api.TakeoverGave {
				return true
			}
		}
		return false
	})
	all, _ := json.Marshal(tl)
	if bytes.Contains(all, []byte(secret)) {
		t.Errorf("the password typed into the password field is in the timeline:\n%s", all)
	}
	if tl.Mode != api.TimelineFull || tl.Task.StoreSlug != store.Slug {
		t.Errorf("timeline of %s: mode %q, store %q", taskA, tl.Mode, tl.Task.StoreSlug)
	}

	// The calls: code, status, output; the worker marked.
	var calls []api.Entry
	seqOf := map[string]int64{} // the first entry of each kind of interest
	first := func(key string, seq int64) {
		if _, ok := seqOf[key]; !ok {
			seqOf[key] = seq
		}
	}
	for _, e := range tl.Entries {
		switch {
		case e.Call != nil && e.Call.Outcome != api.CallAskHuman:
			calls = append(calls, e)
		case e.Download != nil:
			first("download", e.Seq)
		case e.Handoff != nil:
			first("handoff "+e.Handoff.Status, e.Seq)
		case e.Takeover != nil:
			first("takeover "+e.Takeover.Event, e.Seq)
		}
	}
	if len(calls) != 5 {
		t.Fatalf("%d call entries; want 5 (four calls and the download's):\n%s", len(calls), all)
	}
	wants := []struct {
		code, out  string
		exit, slot int
		outcome    string
	}{
		{"/red", `"page red"`, 0, 0, api.CallOK},
		{"/green", `"page green"`, 3, 0, api.CallFailed},
		{"/login", "", 0, 0, api.CallOK},
		{"/blue", `"page blue"`, 0, 2, api.CallOK},
	}
	for i, w := range wants {
		c := calls[i]
		if !strings.Contains(c.Call.Code, "open "+site.URL+w.code) || !strings.Contains(c.Call.Stdout, w.out) ||
			c.Call.Exit != w.exit || c.Call.Outcome != w.outcome || c.Slot != w.slot || c.Call.End.Before(c.Call.Start) {
			t.Errorf("call %d = %+v (slot %d); want its code %s, output %s, exit %d (%s), slot %d", i+1, c.Call, c.Slot,
				w.code, w.out, w.exit, w.outcome, w.slot)
		}
	}
	if code := calls[2].Call.Code; !strings.Contains(code, "type [password hidden]") || !strings.Contains(code, "type plain-name") {
		t.Errorf("the login call's code %q; want the password hidden and the user name as typed", code)
	}
	if calls[3].Client != taskA+"-w2" {
		t.Errorf("the worker's call is client %q", calls[3].Client)
	}

	// The shots: after their call, each showing its page's colour; a tab not changed since its last shot
	// is not photographed again.
	shotsAfter := map[int64][]api.Entry{}
	navs := map[string]bool{}
	for _, e := range tl.Entries {
		if e.Shot != nil {
			shotsAfter[e.Shot.AfterOf] = append(shotsAfter[e.Shot.AfterOf], e)
		}
		if e.Nav != nil {
			navs[e.Nav.URL[strings.LastIndex(e.Nav.URL, "/"):]] = true
		}
	}
	for i, name := range []string{"red", "green", "", "blue"} {
		if name == "" {
			continue
		}
		var found bool
		for _, s := range shotsAfter[calls[i].Seq] {
			if strings.HasSuffix(s.Shot.URL, "/"+name) {
				found = true
				if got := m.shotColour(taskA, s.Seq); !near(got, pageColours[name]) {
					t.Errorf("the shot of /%s shows %v; want %v", name, got, pageColours[name])
				}
				if s.Shot.Width > 1280 {
					t.Errorf("the shot of /%s is %d px wide; want at most 1280", name, s.Shot.Width)
				}
			}
			if strings.HasSuffix(s.Shot.URL, "/red") && i > 0 {
				t.Errorf("call %d photographed the red tab again, unchanged since call 1's shot", i+1)
			}
		}
		if !found {
			t.Errorf("no shot of /%s after call %d: %v", name, i+1, shotsAfter[calls[i].Seq])
		}
	}
	var watchShot bool
	for _, s := range shotsAfter[calls[0].Seq] {
		watchShot = watchShot || strings.HasSuffix(s.Shot.URL, "/watch")
	}
	if !watchShot {
		t.Errorf("call 1 took no shot of the task's /watch tab")
	}
	for _, p := range []string{"/red", "/green", "/login", "/blue"} {
		if !navs[p] {
			t.Errorf("no navigation to %s in the timeline", p)
		}
	}

	// The download, the handoff asked and answered, the takeover: in order.
	order := []string{"download", "handoff pending", "handoff done", "takeover took", "takeover released"}
	for i, k := range order {
		if _, ok := seqOf[k]; !ok {
			t.Errorf("no %s entry:\n%s", k, all)
		} else if i > 0 && seqOf[k] < seqOf[order[i-1]] {
			t.Errorf("%s (entry %d) before %s (entry %d)", k, seqOf[k], order[i-1], seqOf[order[i-1]])
		}
	}

	// The shots are the manager's, 0600.
	files, _ := filepath.Glob(filepath.Join(m.home, "timeline", store.Slug, taskA, "*.jpg"))
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("shot file %s: %v %v; want 0600", f, fi.Mode(), err)
		}
	}
	if len(files) == 0 {
		t.Error("no shot files under timeline/")
	}

	// task log, the human form: one line per entry.
	text := m.cli("task", "log", taskA)
	if lines := strings.Count(text, "\n"); lines != len(tl.Entries)+1 || !strings.Contains(text, "failed exit 3") {
		t.Errorf("task log:\n%s\nwant a heading and one line per entry (%d)", text, len(tl.Entries))
	}

	// The UI's task page and the exported file, in a real browser.
	exported := filepath.Join(t.TempDir(), "task.html")
	m.cli("task", "export", taskA, "-o", exported)
	login = uiLogin(t, m)
	view := startNodeScript(t, "timeline_pages.js", login.URL)
	view.expect("ready")
	shot := filepath.Join(t.TempDir(), "task-page.png")
	view.send("task /task/" + taskA + " " + shot)
	got := view.expect("task")
	wantReadable(t, got, 1280)
	keepScreenshot(t, shot, "task-page.png")
	t.Logf("task page screenshot: %s", shot)
	if n, _ := got["calls"].(float64); n < 5 || !strings.Contains(got["text"].(string), "please solve the captcha") {
		t.Errorf("the task page shows %v call cards and:\n%s", got["calls"], got["text"])
	}
	wantColours(t, "the task page", got["colours"])
	view.send("export " + exported + " " + filepath.Join(t.TempDir(), "export.png"))
	ex := view.expect("export")
	if ex["scripts"] != float64(0) || len(ex["requests"].([]any)) != 0 {
		t.Errorf("the exported file has %v scripts and asked the network for %v", ex["scripts"], ex["requests"])
	}
	wantColours(t, "the exported file", ex["colours"])
	view.send("close")
	view.wait()
}

// wantColours checks that the pictures read off a page show the red, green and blue pages.
func wantColours(t *testing.T, what string, v any) {
	t.Helper()
	seen := map[string]bool{}
	list, _ := v.([]any)
	for _, c := range list {
		rgb := rgbOf(c)
		for name, want := range pageColours {
			if near(rgb, want) {
				seen[name] = true
			}
		}
	}
	for name := range pageColours {
		if !seen[name] {
			t.Errorf("%s shows no picture of the %s page (colours %v)", what, name, list)
		}
	}
}

// TestTimelineOff: a store set to off records nothing of its tasks and keeps no file; meta keeps the steps
// without code, output or shots.
func TestTimelineOff(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	site := timelineSite(t)
	quiet := m.addStore("Quiet Shop")
	m.cli("store", "set", quiet.Slug, "--timeline", "off")
	meta := m.addStore("Meta Shop")
	m.cli("store", "set", meta.Slug, "--timeline", "meta")
	m.mustAgent("--store "+quiet.Slug+" --task "+taskA, "browser-use <<'PY'\nopen "+site.URL+"/red\nPY")
	m.mustAgent("--store "+meta.Slug+" --task "+taskB, "browser-use <<'PY'\nopen "+site.URL+"/green\neval document.title\nPY")

	var tl api.Timeline
	testkit.WaitFor(t, 10*time.Second, "the meta store's call entry", func() bool {
		tl = m.timeline(taskB)
		for _, e := range tl.Entries {
			if e.Call != nil {
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second) // the shots would be recorded within this after the call entry
	tl = m.timeline(taskB)
	for _, e := range tl.Entries {
		if e.Shot != nil || e.Call != nil && (e.Call.Code != "" || e.Call.Stdout != "" || len(e.Call.Args) > 0) {
			t.Errorf("meta recorded %+v; want no code, output or shots", e)
		}
	}
	if off := m.timeline(taskA); off.Mode != api.TimelineOff || off.ModeFrom != "store" || len(off.Entries) != 0 {
		t.Errorf("the off store's task: mode %q from %q, %d entries; want off from the store and none", off.Mode, off.ModeFrom, len(off.Entries))
	}
	if files := testkit.Files(filepath.Join(m.home, "timeline")); len(files) != 0 {
		t.Errorf("files under timeline/: %v; want none", files)
	}
	if text := m.cli("store", "show", quiet.Slug); !strings.Contains(text, "off (from store)") {
		t.Errorf("store show:\n%s\nwant its timeline off", text)
	}
}
