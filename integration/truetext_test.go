//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/timeline"
)

// The trick of issue 38: a tab titled "Seller Central" and a right-to-left override, whose URL holds
// "https://sellercentral.amazon.com" backwards. Drawn after a title that overrides, the URL reads as that
// address; drawn true, it reads as what it is.
const (
	rloTitle = "Seller Central\u202e"
	rloQuery = "moc.nozama.lartnecrelles//:sptth"
)

// truthSite serves the trick's page, a page with a 6,000-character title and a login page with two
// password fields at fixed places, for a person's takeover.
func truthSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch r.URL.Path {
		case "/rlo.html":
			fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>%s</title><body style='background:rgb(250,250,250)'>sign in", rloTitle)
		case "/long":
			fmt.Fprintf(w, "<!doctype html><meta charset=utf-8><title>%s</title>long", strings.Repeat("A very long title ", 340))
		case "/login":
			fmt.Fprint(w, `<!doctype html><meta charset=utf-8><title>Log in</title>
<style>body{margin:0;background:rgb(40,120,200)} input{position:absolute;left:40px;width:300px;height:40px;font-size:20px}</style>
<input id=pw type=password style="top:40px"><input id=pw2 type=password style="top:120px">`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// wantDrawnInOrder checks that each text a page drew holding the trick's URL is drawn left to right.
func wantDrawnInOrder(t *testing.T, what string, got map[string]any, atLeast int) {
	t.Helper()
	texts, _ := got["texts"].([]any)
	if len(texts) < atLeast {
		t.Errorf("%s draws the URL %d times; want at least %d", what, len(texts), atLeast)
	}
	for _, v := range texts {
		tx := v.(map[string]any)
		if first, last := tx["first"].(float64), tx["last"].(float64); first >= last {
			t.Errorf("%s draws %q (in .%v) right to left: its first character at x=%v, its last at x=%v", what, tx["text"], tx["where"], first, last)
		}
	}
}

func TestWhatThePersonReadsIsTrue(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	site := truthSite(t)
	store := m.addStore("True Shop")
	env := "--store " + store.Slug + " --task " + taskA
	trick := site.URL + "/rlo.html?" + rloQuery
	const hostileLine = "# \x1b[31mred\x1b[0m \u202eevil"

	m.mustAgent(env, "browser-use <<'PY'\nopen "+site.URL+"/long\nPY")
	m.mustAgent(env, "browser-use <<'PY'\n"+hostileLine+"\nopen "+trick+"\neval document.title\nPY")
	asking1 := m.askHuman(store.Slug, taskA, "--ask-human", "Log in for me: \u202eereh kcilc", "--wait", "120")
	h := m.pending(store.Slug + "-" + taskA[:8])
	// A second question of the same task (its worker slot): the overview groups the two, the newest first.
	asking2 := m.askHuman(store.Slug, taskA, "--worker", "2", "--ask-human", "Then press Pay", "--wait", "120")
	var h2 api.Handoff
	testkit.WaitFor(t, 10*time.Second, "the second handoff of the task", func() bool {
		hs, err := m.client.ListHandoffs(context.Background(), api.HandoffPending)
		for _, x := range hs {
			if x.ID != h.ID {
				h2 = x
			}
		}
		return err == nil && h2.ID != ""
	})
	var trickTab string
	testkit.WaitFor(t, 15*time.Second, "the shot of the trick's page", func() bool {
		for _, e := range m.timeline(taskA).Entries {
			if e.Shot != nil && strings.Contains(e.Shot.URL, rloQuery) {
				trickTab = e.Shot.Tab
				return true
			}
		}
		return false
	})

	// Every page that names the tab draws its URL true, marks the override, and says whose words the
	// handoff's reason are.
	login := uiLogin(t, m)
	view := startNodeScript(t, "ui_bidi.js", login.URL)
	view.expect("ready")
	for _, p := range []struct{ name, path, shot string }{
		{"the overview", "/", "truth-overview.png"},
		{"the store page", "/store/" + store.Slug, "truth-store.png"},
		{"the task page", "/task/" + taskA, "truth-task.png"},
		{"the tab page", "/store/" + store.Slug + "/tab/" + trickTab, "truth-tab.png"},
	} {
		shot := filepath.Join(t.TempDir(), p.shot)
		view.send("page " + p.path + " " + rloQuery + " " + shot)
		got := view.expect("page")
		wantReadable(t, got, 1280)
		keepScreenshot(t, shot, p.shot)
		wantDrawnInOrder(t, p.name, got, 1)
		body := got["body"].(string)
		if !strings.Contains(body, `\u202e`) || strings.Contains(body, "\u202e") {
			t.Errorf("%s does not mark the override as \\u202e (or draws it raw):\n%.2000s", p.name, body)
		}
		switch p.name {
		case "the overview":
			if !strings.Contains(body, "The agent asks:") {
				t.Errorf("the overview does not say the handoff's reason is the agent's:\n%.2000s", body)
			}
			if i, j := strings.Index(body, "Then press Pay"), strings.Index(body, "1 earlier request of this task"); i < 0 || j < i ||
				!strings.Contains(body[j:], "Log in for me") {
				t.Errorf("the overview does not show the task's newest question first with its earlier one folded under it:\n%.3000s", body)
			}
		case "the task page":
			wantDrawnInOrder(t, p.name, got, 3) // the navigation, the tab's step, the shot's caption
			if tallest := got["tallest"].(float64); tallest > 80 {
				t.Errorf("the task page's tallest step is %v px (a 6,000-character title); want one line", tallest)
			}
			if !strings.Contains(body, `\x1b[31mred`) {
				t.Errorf("the task page does not show the agent's ESC as \\x1b:\n%.3000s", body)
			}
		}
	}

	// The export too, opened with the network off.
	if _, err := m.client.AnswerHandoff(context.Background(), h.ID, api.HandoffAnswer{Status: api.HandoffDone}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.client.AnswerHandoff(context.Background(), h2.ID, api.HandoffAnswer{Status: api.HandoffDone}); err != nil {
		t.Fatal(err)
	}
	for _, a := range []*asking{asking1, asking2} {
		if code := a.exit(t, 10*time.Second); code != 0 {
			t.Fatalf("--ask-human exited %d", code)
		}
	}
	exported := filepath.Join(t.TempDir(), "task.html")
	m.cli("task", "export", taskA, "-o", exported)
	shot := filepath.Join(t.TempDir(), "truth-export.png")
	view.send("file " + exported + " " + rloQuery + " " + shot)
	got := view.expect("file")
	keepScreenshot(t, shot, "truth-export.png")
	wantDrawnInOrder(t, "the export", got, 3)
	if tallest := got["tallest"].(float64); tallest > 80 {
		t.Errorf("the export's tallest step is %v px; want one line", tallest)
	}
	view.send("close")
	view.wait()

	// task log prints the title and the code's ESC and override escaped.
	text := m.cli("task", "log", taskA)
	if strings.ContainsAny(text, "\x1b\u202e") || !strings.Contains(text, `Seller Central\u202e`) ||
		!strings.Contains(text, `# \x1b[31mred\x1b[0m \u202eevil`) {
		t.Errorf("task log:\n%s\nwant the title's and the code's controls escaped", text)
	}

	// A person takes the login tab over, types one password key by key and pastes another; the agent then
	// prints both fields. Neither password is stored; both places say that text was hidden.
	const typed, pasted = "Typed-Pw-1", "Pasted-Pw-2"
	m.mustAgent(env, "browser-use <<'PY'\nopen "+site.URL+"/login\nPY")
	var loginTab string
	testkit.WaitFor(t, 10*time.Second, "the login page's navigation in the timeline", func() bool {
		for _, e := range m.timeline(taskA).Entries {
			if e.Nav != nil && strings.HasSuffix(e.Nav.URL, "/login") {
				loginTab = e.Nav.Tab
			}
		}
		return loginTab != ""
	})
	login = uiLogin(t, m)
	page := startNodeScript(t, "ui_pages.js", login.URL)
	page.expect("ready")
	page.send("tab /store/" + store.Slug + "/tab/" + loginTab + " 40,120,200")
	page.expect("tab")
	page.send("hold")
	if held := page.expect("hold"); held["ok"] != true {
		t.Fatalf("Take over: %v", held)
	}
	page.send("click 190 60")
	page.expect("clicked")
	page.send("type " + typed)
	page.expect("typed")
	page.send("click 190 140")
	page.expect("clicked")
	page.send("paste " + pasted)
	page.expect("pasted")
	page.send("release")
	page.expect("release")
	page.send("close")
	page.wait()
	out := m.mustAgent(env, "browser-use <<'PY'\ntab /login\neval document.getElementById('pw').value + '|' + document.getElementById('pw2').value\nPY")
	if !strings.Contains(out, typed+"|"+pasted) {
		t.Fatalf("the agent's call printed %q; want the person's two passwords (the control: the page holds them)", out)
	}
	var js string
	testkit.WaitFor(t, 10*time.Second, "the call that printed the fields in the timeline", func() bool {
		js = m.cli("task", "log", taskA, "--json")
		return strings.Contains(js, "pw2")
	})
	if strings.Contains(js, typed) || strings.Contains(js, pasted) || !strings.Contains(js, timeline.Hidden+"|"+timeline.Hidden) {
		t.Errorf("task log --json holds a person's password, or does not say it was hidden:\n%s", js)
	}
	m.cli("task", "export", taskA, "-o", exported)
	b, err := os.ReadFile(exported)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), typed) || strings.Contains(string(b), pasted) || !strings.Contains(string(b), timeline.Hidden+"|"+timeline.Hidden) {
		t.Errorf("the export holds a person's password, or does not say it was hidden")
	}
}
