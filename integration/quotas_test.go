//go:build integration

package integration

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/notify"
	"vibebrowser/mux/sys/osuser"
)

// The manager's voice and the quotas (issue 37), tried as a hostile agent would, from its store's agent user
// with its own task tokens, against a root manager; each reach beside its control (the legitimate path still
// works). The floods use js/agentsock.js, run as the agent user.

// quotaRig is a root manager with stores Acme (agent user A) and Bolt (agent user B), and the agents' copy
// of js/agentsock.js (a private clone's is no other user's to read).
type quotaRig struct {
	*managed
	script string
}

// quotaManager starts a quotaRig with extra knobs.
func quotaManager(t *testing.T, extra ...string) (m *quotaRig, acme, bolt api.Store, a, b *osuser.User) {
	t.Helper()
	a, b = testkit.SystemUser(t, agentUserA), testkit.SystemUser(t, agentUserB)
	m = &quotaRig{managed: startManagerWith(t, reachableBinaries(t), boundaryHome(t), extra...),
		script: filepath.Join(testkit.ForOtherUsers(t, "js"), "js", "agentsock.js")}
	for _, s := range []struct {
		dst        *api.Store
		name, user string
	}{{&acme, "Acme", agentUserA}, {&bolt, "Bolt", agentUserB}} {
		if err := json.Unmarshal([]byte(m.cli("store", "add", s.name, "--agent-user", s.user, "--json")), s.dst); err != nil {
			t.Fatal(err)
		}
	}
	return m, acme, bolt, a, b
}

// token mints task's token on store.
func (m *managed) token(task, store string) string {
	m.t.Helper()
	tok, err := m.client.MintTaskToken(context.Background(), task, store)
	if err != nil {
		m.t.Fatal(err)
	}
	return tok.Token
}

// floodStep is one request of an agentsock.js flood, sent times times.
type floodStep struct {
	Method string `json:"method,omitempty"`
	Path   string `json:"path"`
	Body   any    `json:"body,omitempty"`
	Times  int    `json:"times,omitempty"`
}

// floodAnswer is what agentsock.js says of one step.
type floodAnswer struct {
	Statuses map[string]int `json:"statuses"`
	First    struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	} `json:"first"`
	Refusal struct {
		Status int    `json:"status"`
		Body   string `json:"body"`
	} `json:"refusal"`
}

// flood sends steps to m's agent.sock as u with token, one step after another.
func (m *quotaRig) flood(u *osuser.User, token string, steps ...floodStep) []floodAnswer {
	m.t.Helper()
	plan, _ := json.Marshal(steps)
	cmd := exec.Command("node", m.script, "flood", filepath.Join(m.home, api.AgentSocketRel), token)
	cmd.Env, cmd.Dir = []string{"PATH=/usr/bin:/bin"}, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Credential()}
	cmd.Stdin = strings.NewReader(string(plan))
	out, err := cmd.Output()
	if err != nil {
		m.t.Fatalf("agentsock.js flood as %s: %v: %s", u.Name, err, out)
	}
	var answers []floodAnswer
	for line := range strings.Lines(string(out)) {
		var a floodAnswer
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			m.t.Fatalf("agentsock.js printed %q: %v", line, err)
		}
		answers = append(answers, a)
	}
	if len(answers) != len(steps) {
		m.t.Fatalf("agentsock.js answered %d steps of %d: %s", len(answers), len(steps), out)
	}
	return answers
}

// quotaHitsOf is vibe_quota_hits_total{quota=q} in metrics.
func quotaHitsOf(metrics, q string) int {
	m := regexp.MustCompile(`(?m)^vibe_quota_hits_total\{quota="` + q + `"\} (\d+)$`).FindStringSubmatch(metrics)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// slowReceiver records what VIBE_NOTIFY_URL gets, taking delay over each, as a busy receiver would.
type slowReceiver struct {
	notifyReceiver
	delay time.Duration
	// held, when set, holds each notification until it is closed, or for at most heldAtMost (under the
	// manager's 5 s bound of one POST, so no attempt is retried): how long the test takes to reach its next
	// step on a loaded machine does not decide what is still queued then.
	held chan struct{}
}

const heldAtMost = 4 * time.Second

func (r *slowReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.held != nil {
		select {
		case <-r.held:
		case <-time.After(heldAtMost):
		}
	}
	time.Sleep(r.delay)
	r.notifyReceiver.ServeHTTP(w, req)
}

func (r *slowReceiver) all() []notify.Notification {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Notification{}, r.got...)
}

const forgedText = "Paste your Seller Central password into the agent's tab"

// An agent's forged manager kinds are refused on agent.sock (403, naming the rule and the kinds allowed),
// and so is a wedge on another task's session; the shim's own report of its wedged session (exit 75) still
// reaches the overview and VIBE_NOTIFY_URL, marked as the agent's words. Nothing the agent forged does.
func TestAgentCannotSpeakForTheManager(t *testing.T) {
	t.Parallel()
	rec := &slowReceiver{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	m, acme, bolt, a, _ := quotaManager(t, "VIBE_NOTIFY_URL="+srv.URL, "VIBE_CALL_TIMEOUT_S=1")
	tok := m.token(taskA, "acme")
	forge := func(kind, store, session string) floodStep {
		return floodStep{Path: api.PathEvents, Body: api.Event{Kind: kind, StoreID: store, TaskID: taskA, BUName: session, Message: forgedText}}
	}
	refusals := []struct {
		name string
		step floodStep
		want string
	}{
		{"the relaunch budget spent", forge(api.EventBudgetSpent, acme.ID, "acme-a1a1a1a1"), "not one a shim reports"},
		{"the browser died", forge(api.EventBrowserDied, acme.ID, "acme-a1a1a1a1"), "a shim may report only [wedge_unrecoverable]"},
		{"the browser relaunched", forge(api.EventBrowserRelaunched, acme.ID, "acme-a1a1a1a1"), "not one a shim reports"},
		{"a handoff asked", forge(api.EventHandoffRequested, acme.ID, "acme-a1a1a1a1"), "not one a shim reports"},
		{"a wedge of another task's session", forge(api.EventWedgeUnrecoverable, acme.ID, "acme-b2b2b2b2"), "is not task " + taskA + "'s"},
		{"a wedge of another store", forge(api.EventWedgeUnrecoverable, bolt.ID, "bolt-a1a1a1a1"), "only for its own store"},
	}
	var steps []floodStep
	for _, r := range refusals {
		steps = append(steps, r.step)
	}
	for i, got := range m.flood(a, tok, steps...) {
		if r := refusals[i]; got.First.Status != http.StatusForbidden || !strings.Contains(got.First.Body, r.want) {
			t.Errorf("%s, posted by %s: %d %s; want 403 with %q", r.name, agentUserA, got.First.Status, got.First.Body, r.want)
		}
	}

	// The control: the real shim, as the agent user, times out twice in a row and reports its wedge.
	out := m.cli("agent", "--store", "acme", "--task", taskA, "--", "bash", "-c",
		"for i in 1 2; do FAKEBU_SLEEP=30s browser-use </dev/null; echo \"exit $?\"; done")
	if !strings.Contains(out, "exit 142\nexit 75\n") {
		t.Fatalf("two wedged calls as %s printed %q; want exits 142 then 75", agentUserA, out)
	}
	var wedge api.Event
	testkit.WaitFor(t, 10*time.Second, "the shim's wedge in the events", func() bool {
		evs, err := m.client.Events(context.Background())
		for _, ev := range evs {
			if ev.Kind == api.EventWedgeUnrecoverable {
				wedge = ev
			}
		}
		return err == nil && wedge.Kind != ""
	})
	if wedge.TaskID != taskA || wedge.BUName != "acme-a1a1a1a1" || wedge.From != api.FromAgent || !strings.Contains(wedge.Message, "unrecoverable") {
		t.Errorf("the shim's wedge %+v; want task %s's session, its message, from the agent", wedge, taskA)
	}
	testkit.WaitFor(t, 10*time.Second, "the wedge at VIBE_NOTIFY_URL", func() bool { return len(rec.all()) > 0 })
	evs, _ := m.client.Events(context.Background())
	for _, ev := range evs {
		if strings.Contains(ev.Message, forgedText) {
			t.Errorf("the overview's events hold the forged %+v", ev)
		}
	}
	for _, n := range rec.all() {
		if n.Kind != api.EventWedgeUnrecoverable || n.From != api.FromAgent || !strings.HasPrefix(n.Reason, "agent says: ") ||
			strings.Contains(n.Reason, forgedText) {
			t.Errorf("VIBE_NOTIFY_URL got %+v; want only the shim's wedge, said to be the agent's", n)
		}
	}
}

// An agent's floods stop at their quotas, each refusal naming its knob and counted, while another store's
// handoff still reaches the overview and VIBE_NOTIFY_URL (ahead of the agent's queued reports): 320 reports
// (VIBE_TASK_EVENTS_PER_MIN), 100 handoffs (VIBE_HANDOFF_MAX), call reports of 1 MB of code each (cut to 64
// KiB, then VIBE_TIMELINE_MAX_MB), and downloads through its real client (VIBE_DOWNLOAD_MAX_MB).
func TestFloodsStopAtTheirQuotas(t *testing.T) {
	t.Parallel()
	rec := &slowReceiver{delay: 300 * time.Millisecond, held: make(chan struct{})}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	m, acme, bolt, a, b := quotaManager(t, "VIBE_NOTIFY_URL="+srv.URL, "VIBE_TIMELINE_MAX_MB=1", "VIBE_DOWNLOAD_MAX_MB=1")
	const (
		tEvents    = "a1a1a1a1-0000-4000-8000-0000000000e1"
		tHandoffs  = "a1a1a1a1-0000-4000-8000-0000000000e2"
		tReports   = "a1a1a1a1-0000-4000-8000-0000000000e3"
		tDownloads = "a1a1a1a1-0000-4000-8000-0000000000e4"
	)
	ctx := context.Background()

	// 320 reports of the task's own session: the first 20 of the minute are taken.
	wedge := api.Event{Kind: api.EventWedgeUnrecoverable, StoreID: acme.ID, TaskID: tEvents, BUName: "acme-a1a1a1a1", Message: "wedged"}
	got := m.flood(a, m.token(tEvents, "acme"), floodStep{Path: api.PathEvents, Body: wedge, Times: 320})[0]
	if got.Statuses["200"] != 20 || got.Statuses["429"] != 300 || !strings.Contains(got.Refusal.Body, "its quota (VIBE_TASK_EVENTS_PER_MIN=20)") {
		t.Errorf("320 reports: %v, refused with %q; want 20 taken, 300 refused with 429 naming VIBE_TASK_EVENTS_PER_MIN", got.Statuses, got.Refusal.Body)
	}
	// Meanwhile another store's agent asks a person: its handoff goes ahead of A's queued reports.
	victim := m.flood(b, m.token(taskB, "bolt"), floodStep{Path: api.PathHandoffs, Body: api.HandoffRequest{Kind: api.KindStore,
		StoreID: bolt.ID, ClientID: taskB, BUName: "bolt-b2b2b2b2", TaskID: taskB, Reason: "Bolt: solve the captcha", WaitS: 600}})[0]
	var victimH api.Handoff
	if victim.First.Status != http.StatusOK || json.Unmarshal([]byte(victim.First.Body), &victimH) != nil {
		t.Fatalf("Bolt's handoff: %d %s", victim.First.Status, victim.First.Body)
	}
	close(rec.held) // A's reports, held until now, are still queued behind the one being sent

	// 100 handoffs of one task: 3 wait at once.
	ask := api.HandoffRequest{Kind: api.KindStore, StoreID: acme.ID, ClientID: tHandoffs, BUName: "acme-a1a1a1a1", TaskID: tHandoffs,
		Reason: "look at this", WaitS: 600}
	got = m.flood(a, m.token(tHandoffs, "acme"), floodStep{Path: api.PathHandoffs, Body: ask, Times: 100})[0]
	if got.Statuses["200"] != 3 || got.Statuses["429"] != 97 || !strings.Contains(got.Refusal.Body, "its quota (VIBE_HANDOFF_MAX=3)") {
		t.Errorf("100 handoffs: %v, refused with %q; want 3 taken, 97 refused with 429 naming VIBE_HANDOFF_MAX", got.Statuses, got.Refusal.Body)
	}

	// Call reports of 1 MB of code: each cut to 64 KiB, and the task's timeline full at 1 MiB.
	huge := api.CallReport{Client: tReports, Session: "acme-a1a1a1a1", Outcome: api.CallOK, Code: strings.Repeat("x", 1_000_000)}
	got = m.flood(a, m.token(tReports, "acme"), floodStep{Path: "/v1/tasks/" + tReports + "/calls", Body: huge, Times: 40})[0]
	if got.Statuses["200"] < 10 || got.Statuses["200"] > 20 || got.Statuses["429"] < 20 ||
		!strings.Contains(got.Refusal.Body, "its quota (VIBE_TIMELINE_MAX_MB=1)") {
		t.Errorf("40 reports of 1 MB: %v, refused with %q; want a 1 MiB timeline's worth taken, then 429 naming VIBE_TIMELINE_MAX_MB",
			got.Statuses, got.Refusal.Body)
	}
	tl, err := m.client.Timeline(ctx, tReports, 0, false)
	if err != nil || len(tl.Entries) == 0 || tl.Entries[0].Call == nil {
		t.Fatalf("the reports' timeline: %+v, %v", tl, err)
	}
	if c := tl.Entries[0].Call; len(c.Code) != api.CallCodeMax || !c.CodeCut || tl.Entries[0].From != api.FromAgent {
		t.Errorf("a report of 1 MB of code kept %d bytes (cut %v, from %q); want %d, marked cut, the agent's", len(c.Code), c.CodeCut,
			tl.Entries[0].From, api.CallCodeMax)
	}
	if fi, err := os.Stat(filepath.Join(m.home, "state.db")); err != nil || fi.Size() > 8<<20 {
		t.Errorf("state.db after 40 MB of reports: %v, %v; want it within a few MiB", fi.Size(), err)
	}

	// Downloads through the task's own client, as its agent user: 64 KiB is filed, 4 MiB passes 1 MiB and
	// is cancelled.
	files := quotaDownloadSite(t)
	out := m.cli("agent", "--store", "acme", "--task", tDownloads, "--", "bash", "-c", "FAKEBU_DRIVE=1 browser-use <<'PY'\nopen "+
		files.URL+"/\neval document.getElementById('small').click(), 1\nwaitfile small.bin\neval document.getElementById('big').click(), 1\nsleep 5s\nPY")
	if !strings.Contains(out, "small.bin") {
		t.Errorf("the agent's downloads printed %q; want small.bin filed", out)
	}
	var cancelled api.Event
	testkit.WaitFor(t, 20*time.Second, "the big download cancelled", func() bool {
		evs, _ := m.client.Events(ctx)
		for _, ev := range evs {
			if ev.Kind == api.EventDownloadCancelled && ev.TaskID == tDownloads {
				cancelled = ev
			}
		}
		return cancelled.Kind != ""
	})
	if !strings.Contains(cancelled.Message, "VIBE_DOWNLOAD_MAX_MB=1") || !strings.Contains(cancelled.Message, "big.bin") {
		t.Errorf("the cancelled download's event %+v; want it named, with VIBE_DOWNLOAD_MAX_MB", cancelled)
	}
	ds, err := m.client.ListDownloads(ctx, tDownloads, "")
	if err != nil || len(ds) != 1 || ds[0].Name != "small.bin" {
		t.Errorf("the task's downloads: %+v, %v; want small.bin only", ds, err)
	}
	if left := testkit.Files(filepath.Join(m.home, "downloads", "acme")); len(left) != 1 {
		t.Errorf("files under downloads/acme: %q; want small.bin only (nothing of big.bin, not even in .incoming)", left)
	}

	// Bolt's handoff, asked amid the floods: pending, in the overview's events, at VIBE_NOTIFY_URL ahead of A's
	// queued reports.
	pending, err := m.client.ListHandoffs(ctx, api.HandoffPending)
	if err != nil || !containsHandoff(pending, victimH.ID) {
		t.Errorf("pending handoffs %+v, %v; want Bolt's %s", pending, err, victimH.ID)
	}
	evs, _ := m.client.Events(ctx)
	if !slicesContainsFunc(evs, func(ev api.Event) bool { return ev.Kind == api.EventHandoffRequested && ev.Handoff == victimH.ID }) {
		t.Errorf("the overview's events lack Bolt's handoff %s", victimH.ID)
	}
	var arrived []notify.Notification
	testkit.WaitFor(t, 30*time.Second, "Bolt's handoff at VIBE_NOTIFY_URL", func() bool {
		arrived = rec.all()
		return slicesContainsFunc(arrived, func(n notify.Notification) bool { return n.Handoff == victimH.ID })
	})
	// A's reports were queued (the receiver takes 300 ms each) when Bolt asked: in one queue, Bolt's handoff
	// would come after all of them; it comes after the one being sent.
	testkit.WaitFor(t, 30*time.Second, "A's queued reports at VIBE_NOTIFY_URL", func() bool {
		arrived = rec.all()
		return len(arrived) >= 20
	})
	reportsAfter := -1
	for _, n := range arrived {
		switch {
		case n.Handoff == victimH.ID:
			reportsAfter = 0
			if n.Store != "bolt" || n.Reason != "agent says: Bolt: solve the captcha" {
				t.Errorf("Bolt's notification %+v; want its store and its reason, said to be the agent's", n)
			}
		case reportsAfter >= 0 && n.Kind == api.EventWedgeUnrecoverable:
			reportsAfter++
		}
	}
	if reportsAfter < 8 {
		t.Errorf("%d of A's reports reached VIBE_NOTIFY_URL after Bolt's handoff (%v); want Bolt's ahead of A's queued reports",
			reportsAfter, rec.kinds())
	}

	metrics := m.metrics()
	for q, least := range map[string]int{"events_per_minute": 300, "open_handoffs": 97, "call_report_cut": 10,
		"timeline_bytes": 20, "download_bytes": 1} {
		if n := quotaHitsOf(metrics, q); n < least {
			t.Errorf("vibe_quota_hits_total{quota=%q} = %d; want at least %d", q, n, least)
		}
	}
}

// quotaDownloadSite serves a page with two download links: small.bin (64 KiB) and big.bin (4 MiB, sent in
// pieces, as a slow server would).
func quotaDownloadSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		size := map[string]int{"/small.bin": 64 << 10, "/big.bin": 4 << 20}[r.URL.Path]
		if size == 0 {
			fmt.Fprint(w, `<!doctype html><title>files</title><a id="small" href="/small.bin">small</a> <a id="big" href="/big.bin">big</a>`)
			return
		}
		w.Header().Set("Content-Disposition", `attachment; filename="`+strings.TrimPrefix(r.URL.Path, "/")+`"`)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(size))
		chunk := make([]byte, 256<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			if _, err := w.Write(chunk[:min(len(chunk), size-sent)]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			time.Sleep(50 * time.Millisecond)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func containsHandoff(hs []api.Handoff, id string) bool {
	return slicesContainsFunc(hs, func(h api.Handoff) bool { return h.ID == id })
}

func slicesContainsFunc[T any](s []T, f func(T) bool) bool {
	for _, v := range s {
		if f(v) {
			return true
		}
	}
	return false
}

// holder is one agentsock.js hold run: its lines, and its stdin (closing it ends the run).
type holder struct {
	lines chan string
	stdin io.Closer
}

// startHolder runs agentsock.js hold as u: n connections to m's agent.sock, kept idle.
func (m *quotaRig) startHolder(t *testing.T, u *osuser.User, n int) *holder {
	t.Helper()
	sock := filepath.Join(m.home, api.AgentSocketRel)
	cmd := exec.Command("bash", "-c", `ulimit -n "$(ulimit -Hn)" && exec node "$0" hold "$1" "$2"`, m.script, sock, strconv.Itoa(n))
	cmd.Env, cmd.Dir = []string{"PATH=/usr/bin:/bin"}, "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Credential()}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Wait() })
	h := &holder{lines: make(chan string, 100), stdin: stdin}
	go func() {
		s := bufio.NewScanner(stdout)
		s.Buffer(nil, 1<<20)
		for s.Scan() {
			h.lines <- s.Text()
		}
		close(h.lines)
	}()
	return h
}

// holdSummary is what a holder says once it has tried every connection, and then each second (Held).
type holdSummary struct {
	Held, Refused, Answered, Errors int
	Refusal                         string
}

// 20,000 idle connections to agent.sock from one agent user (four processes of it, as this machine's
// descriptor limit allows one process no more than 20,000) leave the manager answering: on its own socket,
// and on agent.sock for another store's task; that user's connections past VIBE_AGENT_CONN_MAX are answered
// 429 naming the knob, and those it holds silent are closed after VIBE_AGENT_IDLE_S, after which its own
// task is served again.
func TestIdleConnectionsLeaveTheManagerAnswering(t *testing.T) {
	t.Parallel()
	m, _, _, a, b := quotaManager(t, "VIBE_AGENT_IDLE_S=20") // past the holders' connecting and the checks
	tokA, tokB := m.token(taskA, "acme"), m.token(taskB, "bolt")
	const holders, each = 4, 5000
	var hs []*holder
	for range holders {
		hs = append(hs, m.startHolder(t, a, each))
	}
	var all holdSummary
	held := make([]int, len(hs)) // each holder's connections open, by its latest line
	for i, h := range hs {
		select {
		case line := <-h.lines:
			var s holdSummary
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("agentsock.js hold printed %q", line)
			}
			held[i] = s.Held
			all.Held, all.Refused, all.Answered, all.Errors = all.Held+s.Held, all.Refused+s.Refused, all.Answered+s.Answered, all.Errors+s.Errors
			all.Refusal = cmp.Or(all.Refusal, s.Refusal)
		case <-time.After(120 * time.Second):
			t.Fatalf("%d connections were not tried within 120 s", each)
		}
	}
	// Past the cap each is closed at once: answered 429 while the manager has room to say it, else unanswered.
	if all.Held > 64 || all.Refused < holders*each-64-all.Errors || all.Errors > 100 || all.Answered == 0 ||
		!strings.HasPrefix(all.Refusal, "HTTP/1.1 429 ") || !strings.Contains(all.Refusal, "its quota (VIBE_AGENT_CONN_MAX=64)") {
		t.Errorf("%d connections as %s: %+v; want at most 64 held, the rest closed at once, some answered 429 naming VIBE_AGENT_CONN_MAX",
			holders*each, agentUserA, all)
	}

	// Those the idle time closed while the holders were still connecting are among their refused, not the cap's.
	if n := quotaHitsOf(m.metrics(), "agent_connections"); n < holders*each*9/10 || n > all.Refused {
		t.Errorf("vibe_quota_hits_total{quota=agent_connections} = %d; want most of the %d closed at once", n, all.Refused)
	}

	// The manager answers meanwhile: on its own socket, and on agent.sock for Bolt's task (another uid).
	began := time.Now()
	if _, err := m.client.Health(context.Background()); err != nil {
		t.Errorf("the manager's own socket with agent.sock flooded: %v", err)
	}
	own := func(u *osuser.User, token, task string) floodAnswer {
		t.Helper()
		return m.flood(u, token, floodStep{Method: "GET", Path: api.PathDownloads + "?task=" + task})[0]
	}
	if got := own(b, tokB, taskB); got.First.Status != http.StatusOK {
		t.Errorf("Bolt's task on agent.sock while %s holds its connections: %d %s; want served", agentUserA, got.First.Status, got.First.Body)
	}
	if took := time.Since(began); took > 5*time.Second {
		t.Errorf("the manager took %v to answer; want it at once", took)
	}
	if got := own(a, tokA, taskA); got.First.Status != http.StatusTooManyRequests {
		t.Errorf("A's own task while A holds its cap: %d %s; want 429 (a uid starves only itself)", got.First.Status, got.First.Body)
	}

	// The ones held silent are closed after the idle time; then A's task is served again.
	testkit.WaitFor(t, 40*time.Second, "the held connections closed by the manager", func() bool {
		total := 0
		for i, h := range hs {
			for drained := false; !drained; {
				select {
				case line := <-h.lines:
					var s holdSummary
					if json.Unmarshal([]byte(line), &s) == nil {
						held[i] = s.Held
					}
				default:
					drained = true
				}
			}
			total += held[i]
		}
		return total == 0
	})
	if got := own(a, tokA, taskA); got.First.Status != http.StatusOK {
		t.Errorf("A's own task once its idle connections were closed: %d %s; want served", got.First.Status, got.First.Body)
	}
}

// `task log` prints an agent's code with its control characters escaped: ESC[2J and U+202E as \x1b[2J and
// \u202e, never raw into the person's terminal; the control, plain code, prints as it is.
func TestTaskLogEscapesControlCharacters(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "Acme")
	const plain = "# print('plain')"
	hostile := "# \x1b[2J\x1b[H print('\u202egnp.exe')"
	m.mustAgent("--store acme --task "+taskA, "browser-use <<'PY'\n"+hostile+"\nPY\nbrowser-use <<'PY'\n"+plain+"\nPY")
	testkit.WaitFor(t, 10*time.Second, "both calls in the timeline", func() bool {
		tl, err := m.client.Timeline(context.Background(), taskA, 0, false)
		calls := 0
		for _, e := range tl.Entries {
			if e.Call != nil {
				calls++
			}
		}
		return err == nil && calls == 2
	})
	raw := func(s string) bool { return strings.ContainsAny(s, "\x1b\u202e") }
	text := m.cli("task", "log", taskA)
	if raw(text) || !strings.Contains(text, `# \x1b[2J\x1b[H print('\u202egnp.exe')`) || !strings.Contains(text, plain) {
		t.Errorf("task log:\n%q\nwant the agent's ESC[2J and U+202E escaped, the plain code as it is", text)
	}
	js := m.cli("task", "log", taskA, "--json")
	if raw(js) || !strings.Contains(js, `\u001b[2J`) || !strings.Contains(js, `\u202e`) {
		t.Errorf("task log --json:\n%s\nwant ESC and U+202E as JSON escapes", js)
	}
	var tl api.Timeline
	if err := json.Unmarshal([]byte(js), &tl); err != nil || !slicesContainsFunc(tl.Entries, func(e api.Entry) bool {
		return e.Call != nil && strings.TrimSpace(e.Call.Code) == hostile
	}) {
		t.Errorf("task log --json reads back as %+v, %v; want the code as the agent sent it", tl.Entries, err)
	}
}
