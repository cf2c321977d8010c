package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/api"
)

// solidJPEG is a real JPEG of one colour, w×h.
func solidJPEG(t *testing.T, w, h int, c color.RGBA) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 70}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// taskTimeline is a running task's timeline on the store "shop" of storeUI: its own session's call and its
// --worker 2 slot's, their shots, a navigation, a download, a handoff asked and answered around a takeover,
// a fault, a refused call whose shot was dropped. Its download 7's file is in dir.
func taskTimeline(t *testing.T, dir string) (api.Timeline, map[int64][]byte, api.Download) {
	t.Helper()
	at := time.Date(2026, 12, 1, 8, 40, 0, 0, time.UTC)
	when := func(s int) time.Time { return at.Add(time.Duration(s) * time.Second) }
	file := filepath.Join(dir, "orders.csv")
	if err := os.WriteFile(file, []byte("id,total\n1,9.90\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	dl := api.Download{ID: 7, Store: "S1", Slug: "shop", Task: task, Client: task, OwnerDir: task, Name: "orders.csv",
		URL: "https://shop.example/export/orders.csv", Path: file, Size: 16,
		SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", At: when(40)}
	call := func(start, secs int, r api.CallReport) *api.CallReport {
		r.Start, r.End = when(start), when(start).Add(time.Duration(secs)*time.Millisecond)
		return &r
	}
	tl := api.Timeline{Task: api.Task{ID: task, Store: "S1", StoreSlug: "shop", Status: "running"},
		Mode: api.TimelineFull, ModeFrom: "VIBE_TIMELINE", Live: true, Entries: []api.Entry{
			{Seq: 1, At: when(0), Kind: api.EntryTab, Client: task, Tab: &api.TabEntry{Tab: "T1", Event: api.TabCreated, URL: "about:blank"}},
			{Seq: 2, At: when(2), Kind: api.EntryCall, Client: task, Call: call(1, 1240, api.CallReport{Client: task,
				Session: "shop-01234567", Args: []string{"open", "https://shop.example/orders"}, Exit: 0, Outcome: api.CallOK,
				Stdout: "Opened https://shop.example/orders\ntitle: Orders\n"})},
			{Seq: 3, At: when(2), Kind: api.EntryNav, Client: task, Nav: &api.NavEntry{Tab: "T1", URL: "https://shop.example/orders", Title: "Orders"}},
			{Seq: 4, At: when(3), Kind: api.EntryShot, Client: task, Shot: &api.ShotEntry{Tab: "T1", URL: "https://shop.example/orders",
				Title: "Orders", AfterOf: 2, Width: 1280, Height: 800, Bytes: 1}},
			{Seq: 5, At: when(20), Kind: api.EntryCall, Client: task + "-w2", Slot: 2, Call: call(12, 8030, api.CallReport{Client: task + "-w2",
				Session: "shop-01234567-w2", Slot: 2, Exit: 1, Outcome: api.CallFailed,
				Code:   "page = browser.new_page()\npage.goto('https://shop.example/payouts')\nprint(page.locator('#total').inner_text())\n",
				Stdout: "loading payouts…\n", Stderr: "Traceback (most recent call last):\n  File \"<stdin>\", line 3\nTimeoutError: locator('#total') not found\n",
				StderrCut: true, Untold: []string{"stdin"}})},
			{Seq: 6, At: when(21), Kind: api.EntryShot, Client: task + "-w2", Slot: 2, Shot: &api.ShotEntry{Tab: "T2", URL: "https://shop.example/payouts",
				Title: "Payouts", AfterOf: 5, Width: 1280, Height: 800, Bytes: 1}},
			{Seq: 7, At: when(40), Kind: api.EntryDownload, Client: task, Download: &dl},
			{Seq: 8, At: when(60), Kind: api.EntryHandoff, Client: task, Handoff: &api.HandoffEntry{ID: "3f9a2c1b0d4e",
				Status: api.HandoffPending, Question: "Solve the <captcha> on the sign-in page"}},
			{Seq: 9, At: when(90), Kind: api.EntryTakeover, Client: task, Takeover: &api.TakeoverEntry{Tab: "T1", Event: api.TakeoverTook, By: "a person in the web UI"}},
			{Seq: 10, At: when(150), Kind: api.EntryTakeover, Client: task, Takeover: &api.TakeoverEntry{Tab: "T1", Event: api.TakeoverGave}},
			{Seq: 11, At: when(151), Kind: api.EntryHandoff, Client: task, Handoff: &api.HandoffEntry{ID: "3f9a2c1b0d4e",
				Status: api.HandoffDone, Note: "Solved it; you are logged in."}},
			{Seq: 12, At: when(200), Kind: api.EntryFault, Client: task, Fault: &api.FaultEntry{What: api.FaultTimeout,
				Message: "browser-use did not answer within 120 s"}},
			{Seq: 13, At: when(230), Kind: api.EntryCall, Client: task + "-w3", Slot: 3, Call: call(230, 12, api.CallReport{Client: task + "-w3",
				Session: "shop-01234567-w3", Slot: 3, Args: []string{"--worker", "3", "state"}, Exit: 2, Outcome: api.CallRefused,
				Rule: "--worker 3 is more than VIBE_WORKERS_MAX (2) allows"})},
			{Seq: 14, At: when(231), Kind: api.EntryShot, Client: task, Shot: &api.ShotEntry{Tab: "T1", AfterOf: 13, Bytes: 0}},
		}}
	shots := map[int64][]byte{
		4: solidJPEG(t, 1280, 800, color.RGBA{0x2e, 0x9e, 0x5b, 0xff}),
		6: solidJPEG(t, 1280, 800, color.RGBA{0x24, 0x57, 0xc5, 0xff}),
	}
	return tl, shots, dl
}

// taskUI is storeUI with taskTimeline's task, shots and download.
func taskUI(t *testing.T) (*uiUnderTest, api.Timeline) {
	t.Helper()
	u, _ := storeUI(t)
	tl, shots, dl := taskTimeline(t, t.TempDir())
	u.src.setTimeline(tl)
	u.src.mu.Lock()
	u.src.shots = map[string]map[int64][]byte{task: shots}
	other := dl
	other.ID, other.Task, other.OwnerDir = 8, "ffffffff-other", "ffffffff-other"
	u.src.files = map[int64]api.Download{7: dl, 8: other}
	u.src.mu.Unlock()
	return u, tl
}

// TestTaskPageScreenshot saves the task page of taskUI as Chromium draws it 1280 px wide to the PNG
// VIBE_UI_SCREENSHOT names; beside it, the page after two more steps came live (-live.png), a shot opened
// full size (-open.png) and the export, opened from a file with the network off (-export.png). Without
// VIBE_UI_SCREENSHOT it is skipped: it needs node, the integration suite's playwright-core and chromium.
func TestTaskPageScreenshot(t *testing.T) {
	out := os.Getenv("VIBE_UI_SCREENSHOT")
	if out == "" {
		t.Skip("VIBE_UI_SCREENSHOT=/tmp/taskpage.png takes screenshots of the task page with chromium")
	}
	u, tl := taskUI(t)
	l, err := u.srv.NewLoginTo("/task/" + task)
	if err != nil {
		t.Fatal(err)
	}
	var export bytes.Buffer
	if err := Export(&export, tl, func(seq int64) ([]byte, error) { return u.src.Shot(t.Context(), task, seq) }); err != nil {
		t.Fatal(err)
	}
	exported := filepath.Join(t.TempDir(), "task.html")
	if err := os.WriteFile(exported, export.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	more := func() { // a shot of the refused call, already shown, and a new call
		tl.Entries = append(tl.Entries,
			api.Entry{Seq: 15, At: tl.Entries[13].At, Kind: api.EntryShot, Shot: &api.ShotEntry{Tab: "T2", Title: "Payouts",
				URL: "https://shop.example/payouts", AfterOf: 13, Bytes: 1}},
			api.Entry{Seq: 16, At: tl.Entries[13].At.Add(time.Minute), Kind: api.EntryCall, Call: &api.CallReport{
				Session: "shop-01234567", Args: []string{"state"}, Exit: 0, Outcome: api.CallOK, Stdout: "2 tabs\n",
				Start: tl.Entries[13].At.Add(time.Minute), End: tl.Entries[13].At.Add(time.Minute + 300*time.Millisecond)}})
		u.src.setTimeline(tl)
		u.src.mu.Lock()
		u.src.shots[task][15] = u.src.shots[task][6]
		u.src.mu.Unlock()
	}
	shoot(t, l.URL, out, "file://"+exported, more)
}

// shootJS is TestTaskPageScreenshot's browser: its arguments are the page's URL, the PNG, and the export's
// URL. Once it saved the page it prints "loaded" and waits for a line: the steps to come are there.
const shootJS = `
const { chromium } = require('playwright-core');
const readline = require('readline');
(async () => {
  const [url, out, exportURL] = process.argv.slice(2);
  const png = (suffix) => out.replace(/\.png$/, '') + suffix + '.png';
  const browser = await chromium.launch({ executablePath: process.env.VIBE_CHROME || '/usr/bin/chromium',
    headless: true, args: ['--no-sandbox'] });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on('pageerror', (err) => console.log('page error: ' + err));
  page.on('console', (msg) => { if (msg.type() === 'error') console.log('console: ' + msg.text()); });
  await page.goto(url, { waitUntil: 'load' });
  await page.screenshot({ path: out, fullPage: true });
  console.log('scrollWidth ' + await page.evaluate(() => document.documentElement.scrollWidth));
  console.log('loaded');
  await new Promise((resolve) => readline.createInterface({ input: process.stdin }).once('line', resolve));
  await page.waitForSelector('#step-16', { timeout: 10000 });
  console.log('shots in the card of call 13: ' + await page.locator('#shots-13 figure.shot').count());
  await page.screenshot({ path: png('-live'), fullPage: true });
  await page.click('figure.shot summary');
  await page.screenshot({ path: png('-open') });
  const offline = await browser.newContext({ viewport: { width: 1280, height: 800 }, offline: true });
  const exp = await offline.newPage();
  exp.on('console', (msg) => console.log('export console: ' + msg.text()));
  await exp.goto(exportURL, { waitUntil: 'load' });
  console.log('export pictures shown: ' + await exp.evaluate(() =>
    [...document.images].filter((i) => i.complete && i.naturalWidth > 0).length));
  await exp.screenshot({ path: png('-export'), fullPage: true });
  await browser.close();
  process.exit(0); // stdin's reader would keep node running
})().catch((err) => { console.log(String(err.stack || err)); process.exit(1); });
`

// shoot runs shootJS with node and the integration suite's playwright-core; more runs once the page is
// loaded.
func shoot(t *testing.T, url, out, exportURL string, more func()) {
	t.Helper()
	modules, err := filepath.Abs("../../integration/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "shoot.js")
	if err := os.WriteFile(script, []byte(shootJS), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, url, out, exportURL)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		t.Logf("node: %s", lines.Text())
		if lines.Text() == "loaded" {
			more()
			_, _ = io.WriteString(stdin, "go\n")
			stdin.Close()
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the screenshots failed: %v", err)
	}
}

func wantInOrder(t *testing.T, what, page string, wants ...string) {
	t.Helper()
	at := 0
	for _, want := range wants {
		i := strings.Index(page[at:], want)
		if i < 0 {
			t.Fatalf("%s lacks %q after byte %d (or has it out of order)", what, want, at)
		}
		at += i + len(want)
	}
}

func TestTaskPageShowsTheSteps(t *testing.T) {
	u, _ := taskUI(t)
	cookie := u.login(t)
	resp := u.do(t, "GET", "/task/"+task, map[string]string{"Cookie": cookie, "Accept": "text/html"})
	page := body(t, resp)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /task/%s = %d:\n%s", task, resp.StatusCode, page)
	}
	wantSecurityHeaders(t, "the task page", resp)
	wantInOrder(t, "the task page", page,
		`<a href="./">Overview</a> › <a href="store/shop">Shop</a>`,
		`Task <code class="task-id">`+task+`</code> <span class="pill running">running</span>`,
		"is the manager&#39;s VIBE_TIMELINE", "vibe-browser store set shop --timeline full|meta|off",
		`Open now:`, `<a class="watch" href="store/shop/tab/T1"`,
		`<div class="step line k-tab" id="step-1">`, "Opened a tab", `<a class="watch" href="store/shop/tab/T1">watch live</a>`,
		// The first call, its output, and its shot inside its card.
		`<article class="step k-call" id="step-2">`, `<span class="pill outcome ok">ok · exit 0</span>`,
		"browser-use open https://shop.example/orders", "session <code>shop-01234567</code> · 1.2 s",
		"Opened https://shop.example/orders", `id="shots-2"`, `<img src="task/`+task+`/shot/4"`, `width="1280" height="800"`,
		`href="task/`+task+`/shot/4"`, "</article>",
		`<div class="step line k-nav" id="step-3">`, "Went to", "https://shop.example/orders", `<p class="detail short" title="Orders"><bdi>Orders</bdi></p>`,
		// The worker slot's failed call: marked, its code folded, its cut stderr and untold stdin said.
		`<article class="step k-call bad" id="step-5">`, `<span class="pill outcome bad">failed · exit 1</span>`,
		`<span class="slot">worker 2</span>`, "browser-use (code on stdin)", `<details class="code"><summary>Code`, "3 lines",
		"page = browser.new_page()", `<div class="output stdout">`, "loading payouts…",
		`<div class="output stderr">`, "earlier output was cut", "TimeoutError", "Not recorded: stdin (a terminal or device, passed to browser-use as it was).",
		`<img src="task/`+task+`/shot/6"`, "</article>",
		`<div class="step line k-download" id="step-7">`, "orders.csv", "16 B", `href="task/`+task+`/download/7" download>Download</a>`,
		"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		`<div class="step line k-handoff alert" id="step-8">`, "Asked a person for help.", `<span class="says">The agent asks:</span>`, "Solve the &lt;captcha&gt; on the sign-in page",
		`<div class="step line k-takeover alert" id="step-9">`, "took the tab over", "Taken by a person in the web UI",
		`<div class="step line k-takeover" id="step-10">`, "given back to the agent",
		`<div class="step line k-handoff" id="step-11">`, "A person answered: done.", "Note: Solved it; you are logged in.",
		`<div class="step line k-fault bad" id="step-12">`, "timed out (exit 142)", "did not answer within 120 s",
		`<article class="step k-call bad" id="step-13">`, `refused · exit 2`, `<span class="slot">worker 3</span>`,
		"browser-use --worker 3 state", `<p class="rule" dir="auto">--worker 3 is more than VIBE_WORKERS_MAX (2) allows</p>`,
		"No code on stdin and no output.", "picture was dropped", "</article>",
	)
	for _, not := range []string{`id="step-4"`, `id="step-6"`, `id="step-14"`, "/store/shop/tab/T2",
		"answer it on the overview", `id="no-steps" class="empty steps-empty">`} {
		if strings.Contains(page, not) {
			t.Errorf("the task page has %q: a shot outside its call's card, a live view of a tab the browser does not "+
				"have, a link to a handoff answered since, or the empty state", not)
		}
	}
	if !strings.Contains(page, `data-live="true"`) || !strings.Contains(page, `<script src="/assets/task.js" defer></script>`) ||
		!strings.Contains(page, `<span id="live" class="live ok"`) {
		t.Errorf("the page of a running task is not live (no task.js, no live badge)")
	}

	// An ended task's page is not: no poll, no badge (session.js, on every page, keeps the session's path).
	tl := u.src.timelines[task]
	tl.Live, tl.Task.Status = false, "completed"
	u.src.setTimeline(tl)
	page = body(t, u.do(t, "GET", "/task/"+task, map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	if strings.Contains(page, "task.js") || strings.Contains(page, `id="live"`) || !strings.Contains(page, `data-live="false"`) {
		t.Errorf("the page of an ended task polls for steps")
	}
}

func TestTaskPageOfTheWebBrowserAndAGoneStore(t *testing.T) {
	u, _ := taskUI(t)
	cookie := u.login(t)
	for _, tt := range []struct {
		name        string
		store, slug string
		want, not   []string
	}{
		{"web", "", "", []string{`<a href="store/web">Web browser</a>`, "VIBE_TIMELINE=full|meta|off"}, []string{"store set"}},
		{"a removed store", "S-gone", "", []string{"store <strong>S-gone</strong>", "vibe-browser store set STORE"},
			[]string{`href="store/`, "watch live"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tl, _, _ := taskTimeline(t, t.TempDir())
			tl.Task.Store, tl.Task.StoreSlug = tt.store, tt.slug
			u.src.setTimeline(tl)
			page := body(t, u.do(t, "GET", "/task/"+task, map[string]string{"Cookie": cookie, "Accept": "text/html"}))
			for _, want := range tt.want {
				if !strings.Contains(page, want) {
					t.Errorf("the task page lacks %q", want)
				}
			}
			for _, not := range tt.not {
				if strings.Contains(page, not) {
					t.Errorf("the task page has %q", not)
				}
			}
		})
	}
}

func TestTaskShotsAndDownloads(t *testing.T) {
	u, _ := taskUI(t)
	cookie := u.login(t)
	hdr := map[string]string{"Cookie": cookie, "Accept": "text/html"}
	resp := u.do(t, "GET", "/task/"+task+"/shot/4", hdr)
	if b := body(t, resp); resp.StatusCode != 200 || b != string(u.src.shots[task][4]) ||
		resp.Header.Get("Content-Type") != "image/jpeg" || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
		!strings.HasPrefix(resp.Header.Get("Cache-Control"), "private") {
		t.Errorf("GET the shot 4 = %d %v; want 200, its JPEG, image/jpeg, nosniff, a private cache", resp.StatusCode, resp.Header)
	}
	resp = u.do(t, "GET", "/task/"+task+"/download/7", hdr)
	if b := body(t, resp); resp.StatusCode != 200 || b != "id,total\n1,9.90\n" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename=orders.csv` ||
		resp.Header.Get("Content-Type") != "application/octet-stream" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET the download 7 = %d %v %q; want 200, the file as an attachment, nosniff", resp.StatusCode, resp.Header, b)
	}
	for _, tt := range []struct{ name, path, text string }{
		{"another task's download", "/task/" + task + "/download/8", "has no download of that number"},
		{"a download of this task through another's page", "/task/ffffffff-other/download/7", "has no download of that number"},
		{"no such download", "/task/" + task + "/download/99", "not there"},
		{"not a download's number", "/task/" + task + "/download/x", "names no download"},
		{"a dropped shot", "/task/" + task + "/shot/14", "no such shot"},
		{"another task's shot", "/task/ffffffff-other/shot/4", "no such shot"},
		{"not a step's number", "/task/" + task + "/shot/x", "names no step"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp := u.do(t, "GET", tt.path, hdr)
			if b := body(t, resp); resp.StatusCode != http.StatusNotFound || !strings.Contains(b, tt.text) ||
				resp.Header.Get("Content-Disposition") != "" {
				t.Errorf("GET %s = %d %q; want 404 saying %q, no file", tt.path, resp.StatusCode, b, tt.text)
			}
		})
	}
	// Behind the login like every page.
	for _, path := range []string{"/task/" + task, "/task/" + task + "/shot/4", "/task/" + task + "/download/7",
		"/task/" + task + "/entries?after=0", "/task/" + task + "/export"} {
		if resp := u.do(t, "GET", path, nil); body(t, resp) == "" || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without a cookie = %d; want 401", path, resp.StatusCode)
		}
	}
}

func TestTaskPageEmptyStates(t *testing.T) {
	u, _ := storeUI(t)
	cookie := u.login(t)
	tests := []struct {
		name       string
		store      string // the task's store id, "" for the web browser
		mode, from string
		live       bool
		want       []string
	}{
		{"off", "S1", api.TimelineOff, "store", true, []string{"Nothing is recorded for this task: its store&#39;s timeline is off.",
			"<code>vibe-browser store set shop --timeline full</code>", "is the store&#39;s own setting"}},
		{"off on the web browser", "", api.TimelineOff, "VIBE_TIMELINE", true, []string{"timeline is off",
			"start the manager with <code>VIBE_TIMELINE=full</code>"}},
		{"meta", "S1", api.TimelineMeta, "store", true, []string{"No step yet: they appear here as the agent works.",
			"no code, output or shots"}},
		{"full", "S1", api.TimelineFull, "VIBE_TIMELINE", true, []string{"Nothing happened yet: the steps appear here as the agent works"}},
		{"full, ended", "S1", api.TimelineFull, "VIBE_TIMELINE", false, []string{"This task has no recorded step",
			"VIBE_TIMELINE_KEEP_DAYS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u.src.setTimeline(api.Timeline{Task: api.Task{ID: task, Store: tt.store, Status: "running"},
				Mode: tt.mode, ModeFrom: tt.from, Live: tt.live})
			resp := u.do(t, "GET", "/task/"+task, map[string]string{"Cookie": cookie, "Accept": "text/html"})
			page := body(t, resp)
			if resp.StatusCode != 200 || !strings.Contains(page, `<p id="no-steps" class="empty steps-empty">`) {
				t.Fatalf("GET the task page = %d, without its empty state shown:\n%s", resp.StatusCode, page)
			}
			for _, want := range tt.want {
				if !strings.Contains(page, want) {
					t.Errorf("the empty task page (%s) lacks %q", tt.name, want)
				}
			}
		})
	}
}

func TestUnknownTaskIs404(t *testing.T) {
	u, _ := storeUI(t)
	cookie := u.login(t)
	for _, path := range []string{"/task/deadbeef-nope", "/task/deadbeef-nope/entries?after=0", "/task/deadbeef-nope/export"} {
		resp := u.do(t, "GET", path, map[string]string{"Cookie": cookie, "Accept": "text/html"})
		if b := body(t, resp); resp.StatusCode != http.StatusNotFound || !strings.Contains(b, "No such task") ||
			strings.Contains(b, "deadbeef-nope") || !strings.Contains(b, "vibe-browser task log ID") || !strings.Contains(b, `href="./"`) {
			t.Errorf("GET %s = %d; want 404 saying there is no such task and what to do:\n%s", path, resp.StatusCode, b)
		}
	}
}

// TestTaskEntriesAreTheNewSteps: the live page's poll answers the head and the steps after its seq, drawn as
// the page draws them; a shot of a call shown before comes on its own, naming its call.
func TestTaskEntriesAreTheNewSteps(t *testing.T) {
	u, _ := taskUI(t)
	cookie := u.login(t)
	hdr := map[string]string{"Cookie": cookie, "Accept": "text/html"}
	page := body(t, u.do(t, "GET", "/task/"+task, hdr))
	resp := u.do(t, "GET", "/task/"+task+"/entries?after=4", hdr)
	got := body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET entries = %d %v", resp.StatusCode, resp.Header)
	}
	if !strings.HasPrefix(got, `<div id="entries" data-last="14" data-live="true">`) || !strings.Contains(got, `<section id="task-head"`) {
		t.Errorf("the entries after 4 = %.200q…; want the last seq 14, live, and the head", got)
	}
	for _, not := range []string{`id="step-2"`, `id="step-3"`, `id="step-4"`} {
		if strings.Contains(got, not) {
			t.Errorf("the entries after 4 have %s", not)
		}
	}
	card := page[strings.Index(page, `<article class="step k-call bad" id="step-5">`):]
	card = card[:strings.Index(card, "</article>")+len("</article>")]
	if !strings.Contains(got, card) {
		t.Errorf("the entries draw the call 5 otherwise than the page:\n%s\nwant\n%s", got, card)
	}
	got = body(t, u.do(t, "GET", "/task/"+task+"/entries?after=5", hdr))
	if !strings.Contains(got, `<div class="step k-shot" id="step-6" data-after-of="5">`) ||
		!strings.Contains(got, `<img src="task/`+task+`/shot/6"`) {
		t.Errorf("the entries after 5 do not bring the shot 6 on its own, for the call 5's card:\n%s", got)
	}
	got = body(t, u.do(t, "GET", "/task/"+task+"/entries?after=14", hdr))
	if !strings.HasPrefix(got, `<div id="entries" data-last="14" data-live="true">`) || strings.Contains(got, `class="step`) {
		t.Errorf("the entries after the last = %.300q; want the head alone, the last seq kept", got)
	}
	if resp := u.do(t, "GET", "/task/"+task+"/entries?after=x", hdr); body(t, resp) == "" || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("entries after x = %d; want 400", resp.StatusCode)
	}
}

// TestCallCardHoldsItsSteps: the steps that happened in a call are drawn inside its card, under its output
// and above its shots, in order; a step outside any call stands between the cards. The live page's poll,
// once the call has come, draws them in its card again, for the page to take the old ones away.
func TestCallCardHoldsItsSteps(t *testing.T) {
	u, _ := taskUI(t)
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	when := func(s int) time.Time { return at.Add(time.Duration(s) * time.Second) }
	const id = "c0ffee00-1111-4222-8333-444444444444"
	u.src.setTimeline(api.Timeline{Task: api.Task{ID: id, Store: "S1", StoreSlug: "shop", Status: "running"},
		Mode: api.TimelineFull, Live: true, Entries: []api.Entry{
			{Seq: 1, At: when(1), Kind: api.EntryTab, Client: id, InCall: 4, Tab: &api.TabEntry{Tab: "T1", Event: api.TabCreated, URL: "about:blank"}},
			{Seq: 2, At: when(2), Kind: api.EntryNav, Client: id, InCall: 4, Nav: &api.NavEntry{Tab: "T1", URL: "https://shop.example/a", Title: "Page A"}},
			{Seq: 3, At: when(2), Kind: api.EntryTakeover, Takeover: &api.TakeoverEntry{Tab: "T9", Event: api.TakeoverTook}},
			{Seq: 4, At: when(3), Kind: api.EntryCall, Client: id, Call: &api.CallReport{Client: id, Outcome: api.CallOK,
				Start: when(0), End: when(3), Stdout: "done\n"}},
			{Seq: 5, At: when(4), Kind: api.EntryShot, Client: id, Shot: &api.ShotEntry{Tab: "T1", AfterOf: 4, Width: 10, Height: 10, Bytes: 1}},
			{Seq: 6, At: when(5), Kind: api.EntryNav, Client: id, Nav: &api.NavEntry{Tab: "T1", URL: "https://shop.example/b"}},
		}})
	cookie := u.login(t)
	hdr := map[string]string{"Cookie": cookie, "Accept": "text/html"}
	page := body(t, u.do(t, "GET", "/task/"+id, hdr))
	wantInOrder(t, "the task page", page,
		`id="step-3"`, // the takeover, between the cards
		`<article class="step k-call" id="step-4">`, "done",
		`<div class="call-steps" id="call-steps-4">`, `id="step-1" data-in-call="4"`, "Opened a tab",
		`id="step-2" data-in-call="4"`, "https://shop.example/a", `<div class="shots" id="shots-4">`, `id="shot-5"`,
		"</article>", `id="step-6"`)
	if strings.Count(page, `id="step-1"`) != 1 {
		t.Errorf("the task page draws step 1 %d times; want once, in its call's card", strings.Count(page, `id="step-1"`))
	}
	got := body(t, u.do(t, "GET", "/task/"+id+"/entries?after=3", hdr))
	wantInOrder(t, "the entries after 3", got, `<article class="step k-call" id="step-4">`,
		`<div class="call-steps" id="call-steps-4">`, `id="step-1" data-in-call="4"`, `id="step-2" data-in-call="4"`, "</article>")
	if strings.Contains(got, `id="step-3"`) {
		t.Errorf("the entries after 3 draw the takeover 3 again")
	}
}

// TestExportIsSelfContained: the export is one file that needs nothing else: no script, nothing fetched or
// linked, the shots inline, the downloads named with their sums.
func TestExportIsSelfContained(t *testing.T) {
	tl, shots, _ := taskTimeline(t, t.TempDir())
	var b bytes.Buffer
	if err := Export(&b, tl, func(seq int64) ([]byte, error) {
		if jpeg, ok := shots[seq]; ok {
			return jpeg, nil
		}
		return nil, ErrNoShot
	}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline'">`,
		"<style>", ".step.k-call", // the UI's stylesheet, inline
		`<img src="` + inline(shots[4]) + `"`, `<img src="` + inline(shots[6]) + `"`,
		"browser-use open https://shop.example/orders", "page = browser.new_page()", "TimeoutError",
		`<strong class="file" dir="auto">orders.csv</strong> <span class="size">16 B</span>`,
		"sha256 <code>9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08</code>",
		"Solve the &lt;captcha&gt;", "took the tab over", "given back", "Solved it; you are logged in.",
		"timed out (exit 142)", "picture was dropped", "store <strong>shop</strong>",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the export lacks %.120q", want)
		}
	}
	if n := strings.Count(out, "data:image/jpeg;base64,"); n != 2 {
		t.Errorf("the export has %d inline shots; want 2 (the third was dropped)", n)
	}
	for _, re := range []string{`(?i)<script`, `(?i)\b(src|href|action)\s*=\s*"?\s*(https?:)?//`, `(?i)\b(src|href|action)\s*=\s*"?/`,
		`(?i)<link\b`, `(?i)<(iframe|object|embed|form)\b`, `(?i)url\(`, `(?i)@import`} {
		if m := regexp.MustCompile(re).FindString(out); m != "" {
			t.Errorf("the export has %q (%s): it must need no script and nothing from a network or the UI", m, re)
		}
	}

	// A shot the source cannot give is left out, and said so.
	b.Reset()
	if err := Export(&b, tl, func(seq int64) ([]byte, error) {
		if seq == 6 {
			return nil, errors.New("its file is unreadable")
		}
		return shots[seq], nil
	}); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Count(out, "data:image/jpeg;base64,") != 1 ||
		!strings.Contains(out, "This shot&#39;s picture is left out: its file is unreadable") {
		t.Errorf("an export whose shot 6 fails does not leave it out saying why")
	}
}

// inline is jpeg's data: URL as a template writes it in an attribute ("+" as a character reference).
func inline(jpeg []byte) string {
	return strings.ReplaceAll("data:image/jpeg;base64,"+base64.StdEncoding.EncodeToString(jpeg), "+", "&#43;")
}

func TestTaskExportRoute(t *testing.T) {
	u, _ := taskUI(t)
	resp := u.do(t, "GET", "/task/"+task+"/export", map[string]string{"Cookie": u.login(t)})
	out := body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Disposition") != `attachment; filename=task-`+task+`.html` ||
		strings.Count(out, "data:image/jpeg;base64,") != 2 || strings.Contains(out, "<script") {
		t.Errorf("GET the export = %d %v; want the task's self-contained file as an attachment", resp.StatusCode, resp.Header)
	}
}

func TestCallSteps(t *testing.T) {
	tests := []struct {
		name    string
		call    api.CallReport
		outcome string
		bad     bool
	}{
		{"ok", api.CallReport{Outcome: api.CallOK}, "ok · exit 0", false},
		{"failed", api.CallReport{Outcome: api.CallFailed, Exit: 1}, "failed · exit 1", true},
		{"refused", api.CallReport{Outcome: api.CallRefused, Exit: 2}, "refused · exit 2", true},
		{"no browser", api.CallReport{Outcome: api.CallUnavailable, Exit: 69}, "no browser · exit 69", true},
		{"timeout", api.CallReport{Outcome: api.CallTimeout, Exit: 142}, "timed out · exit 142", true},
		{"wedged", api.CallReport{Outcome: api.CallWedged, Exit: 75}, "wedged · exit 75", true},
		{"asked a person", api.CallReport{Outcome: api.CallAskHuman}, "asked a person · exit 0", false},
		{"nobody answered", api.CallReport{Outcome: api.CallAskHuman, Exit: 3}, "asked a person · exit 3", true},
		{"an outcome of a newer shim", api.CallReport{Outcome: "odd", Exit: 0}, "odd · exit 0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, bad := stepBuilder{}.callStep(tt.call)
			if cs.Outcome != tt.outcome || bad != tt.bad {
				t.Errorf("callStep(%s) = %q, bad %v; want %q, bad %v", tt.name, cs.Outcome, bad, tt.outcome, tt.bad)
			}
		})
	}
	if got := command([]string{"open", "https://x.example/?a=1&b=2", "it's"}); got != `browser-use open 'https://x.example/?a=1&b=2' 'it'\''s'` {
		t.Errorf("command() = %q", got)
	}
	if cs, _ := (stepBuilder{mode: api.TimelineMeta}).callStep(api.CallReport{Outcome: api.CallOK}); !strings.Contains(cs.NoText, "meta") {
		t.Errorf("a call of a meta timeline says %q; want that meta keeps no code or output", cs.NoText)
	}
}
