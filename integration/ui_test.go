//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/api"
)

// liveWithin is SPEC §11's bound on how stale the overview may be after a change.
const liveWithin = 2 * time.Second

// overviewRows is what ui_overview.js reads off the page.
type overviewRows struct {
	Browsers []struct{ Key, Slug, Status, PID, Clients, Tabs, Backend, Uptime, Relaunches string }
	Tasks    []struct{ ID, Store, Status, Lease string }
	Events   []struct {
		Kind, Store string
		Alert       bool
	}
	MS          float64
	ScrollWidth float64
	Problems    []string
}

func rowsOf(t *testing.T, line map[string]any) overviewRows {
	t.Helper()
	raw, _ := json.Marshal(line)
	var r overviewRows
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// sameAsStatus checks that the page lists exactly the browsers and tasks of `status --json`.
func sameAsStatus(t *testing.T, m *managed, got overviewRows) {
	t.Helper()
	var st api.Status
	if err := json.Unmarshal([]byte(m.cli("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	slugs := map[string]string{}
	for _, s := range st.Stores {
		slugs[s.ID] = s.Slug
	}
	if len(got.Browsers) != len(st.Browsers) {
		t.Errorf("overview lists %d browsers; status lists %d", len(got.Browsers), len(st.Browsers))
	}
	for i, b := range st.Browsers {
		if i >= len(got.Browsers) {
			break
		}
		row := got.Browsers[i]
		pid := "–"
		if b.Status == api.StatusRunning {
			pid = strconv.Itoa(b.PID)
		}
		wantSlug := b.Slug
		if b.Key == api.WebKey {
			wantSlug = "web"
		}
		if row.Key != b.Key || row.Slug != wantSlug || row.Status != b.Status || row.PID != pid ||
			row.Clients != strconv.Itoa(b.Clients) || row.Tabs != strconv.Itoa(b.Tabs) {
			t.Errorf("overview browser %d = %+v; status says %+v", i, row, b)
		}
		if running := b.Status == api.StatusRunning; running == b.StartedAt.IsZero() || running == (row.Uptime == "–") {
			t.Errorf("browser %s: status started_at %v, overview uptime %q; want both set exactly while running",
				b.Slug, b.StartedAt, row.Uptime)
		}
		if want := fmt.Sprintf("%d of %d", b.RelaunchesLeft, b.RelaunchMax); b.RelaunchMax == 0 || row.Relaunches != want {
			t.Errorf("browser %s: relaunches left %q on the overview; want %q from the status", b.Slug, row.Relaunches, want)
		}
	}
	if len(got.Tasks) != len(st.Tasks) {
		t.Errorf("overview lists %d tasks; status lists %d", len(got.Tasks), len(st.Tasks))
	}
	listed := map[string]string{}
	for _, row := range got.Tasks {
		listed[row.ID] = row.Store + " " + row.Status
	}
	for _, task := range st.Tasks {
		store := slugs[task.Store]
		if task.Store == "" {
			store = "–"
		}
		if want := store + " " + task.Status; listed[task.ID] != want {
			t.Errorf("overview task %s = %q; status says %q", task.ID, listed[task.ID], want)
		}
	}
}

// uiLogin asks the manager for a one-time login link, as `vibe-browser ui --json` prints it.
func uiLogin(t *testing.T, m *managed) api.UILogin {
	t.Helper()
	var login api.UILogin
	if err := json.Unmarshal([]byte(m.cli("ui", "--json")), &login); err != nil {
		t.Fatal(err)
	}
	return login
}

func TestWebUIOverview(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "Acme Shop")
	m.cli("store", "add", "Bolt Store")
	m.cli("browser", "start", "acme-shop")
	m.cli("task", "set", taskA, "--store", "acme-shop", "--status", "running")
	login := uiLogin(t, m)
	if want := "http://" + m.uiAddr + "/login?code=" + login.Code; login.URL != want {
		t.Fatalf("ui --json URL %q; want %q", login.URL, want)
	}
	if plain := m.cli("ui"); !strings.HasPrefix(plain, "http://"+m.uiAddr+"/login?code=") {
		t.Errorf("ui printed %q; want the login URL first", plain)
	}

	page := startNodeScript(t, "ui_overview.js", login.URL)
	ready := page.expect("ready")
	if ready["status"] != float64(200) || ready["url"] != "http://"+m.uiAddr+"/" {
		t.Fatalf("login landed on %v with %v; want the overview with 200", ready["url"], ready["status"])
	}
	sameAsStatus(t, m, rowsOf(t, ready))

	acme, err := m.client.GetStore(context.Background(), "acme-shop")
	if err != nil {
		t.Fatal(err)
	}
	bolt, err := m.client.GetStore(context.Background(), "bolt-store")
	if err != nil {
		t.Fatal(err)
	}
	m.cli("task", "set", taskB, "--store", "bolt-store", "--status", "waiting")
	changed := time.Now()
	page.send("wait-task " + taskB + " waiting")
	got := rowsOf(t, page.expect("changed"))
	if took := time.Since(changed); took > liveWithin {
		t.Errorf("the overview showed the new task after %v; want within %v", took, liveWithin)
	}
	sameAsStatus(t, m, got)

	// A shim's report that needs a person shows up, highlighted.
	if err := m.client.ReportEvent(context.Background(), api.Event{Kind: api.EventWedgeUnrecoverable, StoreID: bolt.ID,
		TaskID: taskB, BUName: "bolt-store-b2b2b2b2", Message: "two timeouts in a row: the session's browser is unrecoverable"}); err != nil {
		t.Fatal(err)
	}
	changed = time.Now()
	page.send("wait-event " + api.EventWedgeUnrecoverable)
	got = rowsOf(t, page.expect("changed"))
	if took := time.Since(changed); took > liveWithin {
		t.Errorf("the overview showed the event after %v; want within %v", took, liveWithin)
	}
	if len(got.Events) == 0 || got.Events[0].Kind != api.EventWedgeUnrecoverable || !got.Events[0].Alert ||
		got.Events[0].Store != "bolt-store" {
		t.Errorf("newest event %+v; want wedge_unrecoverable of bolt-store, highlighted", got.Events)
	}

	shot := filepath.Join(t.TempDir(), "overview.png")
	page.send("screenshot " + shot)
	sc := rowsOf(t, page.expect("screenshot"))
	if sc.ScrollWidth > 1280 {
		t.Errorf("the overview is %v px wide at a 1280 px viewport; want no horizontal overflow", sc.ScrollWidth)
	}
	if len(sc.Problems) > 0 {
		t.Errorf("the page logged errors (a CSP violation, a script error): %q", sc.Problems)
	}
	t.Logf("overview screenshot: %s", shot)
	keepScreenshot(t, shot, "overview.png")
	// A small laptop screen: still no sideways scrolling.
	page.send("viewport 1024 700")
	page.expect("viewport")
	narrow := filepath.Join(t.TempDir(), "overview-1024.png")
	page.send("screenshot " + narrow)
	if sc := rowsOf(t, page.expect("screenshot")); sc.ScrollWidth > 1024 {
		t.Errorf("the overview is %v px wide at a 1024 px viewport; want no horizontal overflow", sc.ScrollWidth)
	}
	t.Logf("overview screenshot at 1024 px: %s", narrow)
	page.send("viewport 1280 800")
	page.expect("viewport")

	m.cli("browser", "stop", "acme-shop")
	changed = time.Now()
	page.send("wait-browser " + acme.ID + " stopped")
	got = rowsOf(t, page.expect("changed"))
	if took := time.Since(changed); took > liveWithin {
		t.Errorf("the overview showed the stopped browser after %v; want within %v", took, liveWithin)
	}
	sameAsStatus(t, m, got)

	page.send("refusals")
	ref := page.expect("refusals")
	if ref["reused"] != float64(401) || !strings.Contains(ref["reusedText"].(string), "used or expired") {
		t.Errorf("the reused login URL answered %v %q; want 401 saying it is used or expired", ref["reused"], ref["reusedText"])
	}
	if ref["bare"] != float64(401) || !strings.Contains(ref["bareText"].(string), "vibe-browser ui") {
		t.Errorf("the overview without a cookie answered %v %q; want 401 saying to run vibe-browser ui", ref["bare"], ref["bareText"])
	}

	if err := m.stop(); err != nil {
		t.Errorf("manager exit: %v", err)
	}
	page.send("lost")
	if lost := page.expect("lost"); !strings.Contains(lost["text"].(string), "retrying") || lost["stale"] != true {
		t.Errorf("with the manager gone the page says %q (dimmed: %v); want that it is retrying, dimmed", lost["text"], lost["stale"])
	}
	lostShot := filepath.Join(t.TempDir(), "overview-lost.png")
	page.send("screenshot " + lostShot)
	page.expect("screenshot")
	t.Logf("screenshot with the live connection lost: %s", lostShot)
	page.send("close")
	page.expect("closed")
	page.wait()
}

func TestWebUIOffAndOpen(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_UI_ADDR=off")
	out, err := m.cliErr("ui")
	if err == nil || !strings.Contains(out, "VIBE_UI_ADDR") {
		t.Errorf("ui with the UI off: %v %q; want an error naming VIBE_UI_ADDR", err, out)
	}
	on := startManager(t)
	// No xdg-open or open on this PATH: the link is still printed and the error says what to do.
	out, err = on.cliErr("ui", "--open")
	if err == nil || !strings.Contains(out, "http://"+on.uiAddr+"/login?code=") || !strings.Contains(out, "open the URL above") {
		t.Errorf("ui --open without an opener: %v %q; want the URL and what to do", err, out)
	}

	// A manager with nothing yet: the overview says what to do.
	login := uiLogin(t, on)
	page := startNodeScript(t, "ui_overview.js", login.URL)
	if empty := rowsOf(t, page.expect("ready")); len(empty.Tasks) != 0 || len(empty.Browsers) != 1 {
		t.Errorf("empty manager's overview lists %+v; want only the web browser", empty)
	}
	shot := filepath.Join(t.TempDir(), "overview-empty.png")
	page.send("screenshot " + shot)
	if sc := rowsOf(t, page.expect("screenshot")); len(sc.Problems) > 0 || sc.ScrollWidth > 1280 {
		t.Errorf("empty overview: errors %q, width %v", sc.Problems, sc.ScrollWidth)
	}
	t.Logf("empty overview screenshot: %s", shot)
	keepScreenshot(t, shot, "overview-empty.png")
	page.send("close")
	page.expect("closed")
	page.wait()
}

// keepScreenshot keeps a test's screenshot as an artefact that outlives the test, in
// $TMPDIR/vibe-browser-screenshots/name, and with VIBE_UPDATE_SCREENSHOTS=1 also in
// testdata/screenshots/name, where the README shows it (an ordinary run changes no tracked file).
func keepScreenshot(t *testing.T, shot, name string) {
	t.Helper()
	png, err := os.ReadFile(shot)
	if err != nil {
		t.Errorf("keep the screenshot %s: %v", name, err)
		return
	}
	dirs := []string{filepath.Join(os.TempDir(), "vibe-browser-screenshots")}
	if os.Getenv("VIBE_UPDATE_SCREENSHOTS") == "1" {
		dirs = append(dirs, filepath.Join("testdata", "screenshots"))
	}
	for _, dir := range dirs {
		err := os.MkdirAll(dir, 0o755)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, name), png, 0o644)
		}
		if err != nil {
			t.Errorf("keep the screenshot %s: %v", name, err)
			continue
		}
		t.Logf("screenshot kept: %s", filepath.Join(dir, name))
	}
}
