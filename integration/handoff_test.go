//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/notify"
)

// asking is a `browser-use --ask-human` running through a store's generated wrapper.
type asking struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan struct{}
	code           int
}

// askHuman runs the slug's wrapper with args as task's agent; it reads no stdin (none is given).
func (m *managed) askHuman(slug, task string, args ...string) *asking {
	m.t.Helper()
	cmd := exec.Command(filepath.Join(m.home, "bin", slug, "browser-use"), args...)
	cmd.Env = append(append([]string{}, m.env...), "VIBE_TASK_ID="+task)
	a := &asking{cmd: cmd, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = a.stdout, a.stderr
	if err := cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	go func() {
		_ = cmd.Wait()
		a.code = cmd.ProcessState.ExitCode()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			a.code = 128 + int(ws.Signal())
		}
		close(a.done)
	}()
	m.t.Cleanup(func() {
		select {
		case <-a.done:
		default:
			cmd.Process.Kill()
			<-a.done
		}
	})
	return a
}

// exit waits for the shim's exit code.
func (a *asking) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-a.done:
		return a.code
	case <-time.After(within):
		t.Fatalf("the shim did not exit within %v; stderr so far:\n%s", within, a.stderr.String())
		return 0
	}
}

// pending waits for the handoff of session buName to be listed as pending and returns it.
func (m *managed) pending(buName string) api.Handoff {
	m.t.Helper()
	var found api.Handoff
	testkit.WaitFor(m.t, 10*time.Second, "a pending handoff of "+buName, func() bool {
		hs, err := m.client.ListHandoffs(context.Background(), api.HandoffPending)
		for _, h := range hs {
			if h.BUName == buName {
				found = h
			}
		}
		return err == nil && found.ID != ""
	})
	return found
}

func (m *managed) handoff(id string) api.Handoff {
	m.t.Helper()
	h, err := m.client.GetHandoff(context.Background(), id)
	if err != nil {
		m.t.Fatal(err)
	}
	return h
}

// TestHandoffThroughTheWrapper: an agent's --ask-human through the real wrapper appears on the live
// overview, highlighted and first with its task's tab; a person types a note and presses Done; the agent
// prints the note and exits 0. Nobody in time is exit 79, "can't help" exit 80, and a SIGTERM to the
// shim withdraws its handoff.
func TestHandoffThroughTheWrapper(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	web := site(t)
	m.cli("store", "add", "Acme Shop")
	m.mustAgent("--store acme-shop --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/orders\nPY")

	login := uiLogin(t, m)
	page := startNodeScript(t, "ui_handoff.js", login.URL)
	page.expect("ready")

	reason := "Solve the captcha on the Seller Central sign-in page, then press Done"
	agent := m.askHuman("acme-shop", taskA, "--ask-human", reason, "--wait", "120")
	h := m.pending("acme-shop-a1a1a1a1")
	if h.Reason != reason || h.Store != "acme-shop" || h.TaskID != taskA || h.ClientID != taskA || h.WaitS != 120 {
		t.Errorf("the handoff is %+v; want the reason, store, task and client of the call, waiting 120 s", h)
	}
	if want := "http://" + m.uiAddr + "/#handoff-" + h.ID; h.URL != want {
		t.Errorf("handoff URL %q; want %q", h.URL, want)
	}
	testkit.WaitFor(t, 5*time.Second, "the shim to say where the person sees it", func() bool {
		return strings.Contains(agent.stderr.String(), h.URL) && strings.Contains(agent.stderr.String(), "vibe-browser handoff list")
	})

	page.send("wait-handoff " + h.ID)
	card := page.expect("handoff")
	if card["ms"].(float64) > float64(liveWithin/time.Millisecond) {
		t.Errorf("the overview showed the handoff after %v ms; want within %v", card["ms"], liveWithin)
	}
	if card["reason"] != reason || card["store"] != "acme-shop" || card["task"] != taskA || card["first"] != true {
		t.Errorf("the handoff card %v; want the reason, store and task, above the stores", card)
	}
	tabs, _ := card["tabs"].([]any)
	if len(tabs) != 1 || !strings.Contains(tabs[0].(map[string]any)["title"].(string), "page orders") ||
		!strings.HasPrefix(tabs[0].(map[string]any)["href"].(string), "/store/acme-shop/tab/") {
		t.Errorf("the card's tabs %v; want the task's one tab, linking to its live view", tabs)
	}
	if card["title"] != "(1) Overview · vibe-browser" {
		t.Errorf("the page title %q; want the count of waiting handoffs in it", card["title"])
	}
	shootAtBothWidths(t, page, "handoff", "overview with a pending handoff")
	if status := m.cli("status"); !strings.Contains(status, "1 handoff waiting for a person") || !strings.Contains(status, h.ID) {
		t.Errorf("status says:\n%s\nwant the pending handoff counted and listed", status)
	}

	note := "Solved it; the order page is open again"
	page.send("answer " + h.ID + " done " + note)
	ans := page.expect("answered")
	if ans["refused"] != "" {
		t.Fatalf("the UI refused the answer: %v", ans["refused"])
	}
	if ans["kept"] != note || ans["still"] != false || !strings.Contains(ans["banner"].(string), h.ID) {
		t.Errorf("after Done: %v; want the typed note kept through the live updates, the card gone and a confirmation", ans)
	}
	if code := agent.exit(t, 10*time.Second); code != 0 || agent.stdout.String() != note+"\n" {
		t.Errorf("the shim exited %d with stdout %q; want 0 and the note", code, agent.stdout.String())
	}
	if got := m.handoff(h.ID); got.Status != api.HandoffDone || got.Note != note {
		t.Errorf("the handoff is %+v; want done with the note", got)
	}

	// Nobody answers within --wait 2.
	began := time.Now()
	lonely := m.askHuman("acme-shop", taskA, "--worker", "2", "--ask-human=approve the refund of order 1234", "--wait=2")
	if code := lonely.exit(t, 15*time.Second); code != 79 {
		t.Errorf("nobody answering: exit %d; want 79", code)
	}
	if took := time.Since(began); took > 8*time.Second {
		t.Errorf("--wait 2 returned after %v; want about 2 s", took)
	}
	for _, want := range []string{"nobody answered", "within 2 s", "blocked on a person", "do not ask again in a loop"} {
		if !strings.Contains(lonely.stderr.String(), want) {
			t.Errorf("exit 79's message %q lacks %q", lonely.stderr.String(), want)
		}
	}
	all, _ := m.client.ListHandoffs(context.Background(), "")
	if last := all[len(all)-1]; last.Status != api.HandoffTimedOut || last.BUName != "acme-shop-a1a1a1a1-w2" || last.ClientID != taskA+"-w2" {
		t.Errorf("the unanswered handoff is %+v; want timed_out, of worker slot 2", last)
	}

	// Can't help, from the command line.
	blocked := m.askHuman("acme-shop", taskA, "--session", "acme-shop-aux", "--ask-human", "enter the code sent to the owner's phone")
	hb := m.pending("acme-shop-aux")
	if hb.ClientID != "aux" || hb.WaitS != api.DefaultHandoffWaitS {
		t.Errorf("the aux session's handoff is %+v; want client aux and the default wait", hb)
	}
	if out := m.cli("handoff", "list"); !strings.Contains(out, hb.ID) || !strings.Contains(out, "enter the code sent") {
		t.Errorf("handoff list:\n%s\nwant the pending handoff", out)
	}
	m.cli("handoff", "done", hb.ID, "--cant-help", "--note", "the owner is travelling")
	if code := blocked.exit(t, 10*time.Second); code != 80 || blocked.stdout.String() != "the owner is travelling\n" ||
		!strings.Contains(blocked.stderr.String(), "cannot help") || !strings.Contains(blocked.stderr.String(), "blocked on a person") {
		t.Errorf("can't help: exit %d, stdout %q, stderr %q; want 80, the note, and what to do", code, blocked.stdout.String(), blocked.stderr.String())
	}
	if out, err := m.cliErr("handoff", "done", hb.ID); err == nil || !strings.Contains(out, "already answered that they cannot help") {
		t.Errorf("answering twice: %v %q; want a refusal saying it was answered", err, out)
	}

	// A SIGTERM to the waiting shim withdraws its handoff.
	quitter := m.askHuman("acme-shop", taskA, "--ask-human", "check the payout settings")
	hq := m.pending("acme-shop-a1a1a1a1")
	page.send("wait-handoff " + hq.ID)
	page.expect("handoff")
	quitter.cmd.Process.Signal(syscall.SIGTERM)
	if code := quitter.exit(t, 10*time.Second); code != 128+int(syscall.SIGTERM) || !strings.Contains(quitter.stderr.String(), "cancelled handoff "+hq.ID) {
		t.Errorf("SIGTERM: exit %d, stderr %q; want 143 saying the handoff was cancelled", code, quitter.stderr.String())
	}
	if got := m.handoff(hq.ID); got.Status != api.HandoffCancelled {
		t.Errorf("after the SIGTERM the handoff is %s; want cancelled", got.Status)
	}
	page.send("wait-gone " + hq.ID)
	if gone := page.expect("gone"); gone["sectionHidden"] != true {
		t.Errorf("with no handoff left the section still shows: %v", gone)
	}

	// A refused call starts nothing and registers nothing.
	refused := m.askHuman("acme-shop", taskA, "--ask-human", "x", "--wait", "0")
	if code := refused.exit(t, 10*time.Second); code != 2 || !strings.Contains(refused.stderr.String(), "--wait") {
		t.Errorf("--wait 0: exit %d %q; want 2 naming --wait", code, refused.stderr.String())
	}
	extra := m.askHuman("acme-shop", taskA, "--ask-human", "x", "open", "https://example.com")
	if code := extra.exit(t, 10*time.Second); code != 2 || !strings.Contains(extra.stderr.String(), "takes no other arguments") {
		t.Errorf("--ask-human with a command: exit %d %q; want 2", code, extra.stderr.String())
	}
	if after, _ := m.client.ListHandoffs(context.Background(), ""); len(after) != len(all)+2 {
		t.Errorf("%d handoffs after the refused calls; want %d (the refusals register none)", len(after), len(all)+2)
	}
	page.send("close")
	page.expect("closed")
	page.wait()
}

// TestHandoffSurvivesManagerKill: kill -9 of the manager while an agent waits; the restarted manager still
// has the handoff, and the person's answer still reaches the same shim.
func TestHandoffSurvivesManagerKill(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "Acme Shop")
	agent := m.askHuman("acme-shop", taskB, "--ask-human", "confirm it's you on the bank page", "--wait", "120")
	h := m.pending("acme-shop-b2b2b2b2")
	testkit.WaitFor(t, 5*time.Second, "the shim to wait", func() bool {
		return strings.Contains(agent.stderr.String(), "waiting up to 120 s")
	})
	m.cmd.Process.Kill()
	m.cmd.Wait()
	testkit.WaitFor(t, 10*time.Second, "the shim to notice the manager is gone", func() bool {
		return strings.Contains(agent.stderr.String(), "lost the manager")
	})
	m.start()
	if got := m.handoff(h.ID); got.Status != api.HandoffPending || got.Reason != h.Reason {
		t.Fatalf("after kill -9 and a restart the handoff is %+v; want it still pending", got)
	}
	if out := m.cli("handoff", "list", "--json"); !strings.Contains(out, h.ID) {
		t.Errorf("handoff list --json after the restart:\n%s\nwant the handoff", out)
	}
	m.cli("handoff", "done", h.ID, "--note", "confirmed on my phone")
	if code := agent.exit(t, 15*time.Second); code != 0 || agent.stdout.String() != "confirmed on my phone\n" {
		t.Errorf("after the restart the shim exited %d with %q (stderr %q); want 0 and the note",
			code, agent.stdout.String(), agent.stderr.String())
	}
	if !strings.Contains(agent.stderr.String(), "the manager is back") {
		t.Errorf("the shim's stderr %q does not say it found the manager again", agent.stderr.String())
	}
	// An answered handoff is listed with --all, its note with it.
	var all []api.Handoff
	if err := json.Unmarshal([]byte(m.cli("handoff", "list", "--all", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[0].ID != h.ID || all[0].Status != api.HandoffDone || all[0].Note != "confirmed on my phone" {
		t.Errorf("handoff list --all --json = %+v; want the answered handoff with its note", all)
	}
	if out := m.cli("handoff", "list", "--all"); !strings.Contains(out, "confirmed on my phone") || !strings.Contains(out, "NOTE") {
		t.Errorf("handoff list --all:\n%s\nwant the note in its NOTE column", out)
	}
}

// notifyReceiver records what VIBE_NOTIFY_URL gets.
type notifyReceiver struct {
	mu  sync.Mutex // mu guards got
	got []notify.Notification
}

func (r *notifyReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var n notify.Notification
	if err := json.NewDecoder(req.Body).Decode(&n); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.got = append(r.got, n)
	r.mu.Unlock()
}

func (r *notifyReceiver) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.got {
		out = append(out, n.Kind)
	}
	return out
}

// wedge makes two calls of task's agent in a row time out (the fake CLI sleeps past VIBE_CALL_TIMEOUT_S=1):
// the second exits 75 and the shim reports wedge_unrecoverable.
func (m *managed) wedge(task string) {
	m.t.Helper()
	for i, want := range []int{142, 75} {
		_, err := m.agent("--store acme-shop --task "+task, "export FAKEBU_SLEEP=30s\nbrowser-use <<'PY'\nPY")
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != want {
			m.t.Fatalf("wedged call %d: %v; want exit %d", i+1, err, want)
		}
	}
}

func TestNotifyURLGetsHandoffsAndWedges(t *testing.T) {
	t.Parallel()
	rec := &notifyReceiver{}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	m := startManager(t, "VIBE_NOTIFY_URL="+srv.URL+"/hook?key=s3cret", "VIBE_CALL_TIMEOUT_S=1")
	m.cli("store", "add", "Acme Shop")
	agent := m.askHuman("acme-shop", taskA, "--ask-human", "pick the shipping carrier", "--wait", "60")
	h := m.pending("acme-shop-a1a1a1a1")
	m.wedge(taskB)
	testkit.WaitFor(t, 15*time.Second, "the handoff and the wedge at VIBE_NOTIFY_URL", func() bool {
		return len(rec.kinds()) >= 2
	})
	rec.mu.Lock()
	got := append([]notify.Notification{}, rec.got...)
	rec.mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("VIBE_NOTIFY_URL got %+v; want the handoff and the wedge", got)
	}
	if n := got[0]; n.Kind != api.EventHandoffRequested || n.Store != "acme-shop" || n.Task != taskA ||
		n.Reason != "agent says: pick the shipping carrier" || n.From != api.FromAgent || n.Handoff != h.ID || n.URL != h.URL {
		t.Errorf("the handoff's notification %+v; want kind, store slug, task, the reason as the agent's, handoff and its UI link %s", n, h.URL)
	}
	if n := got[1]; n.Kind != api.EventWedgeUnrecoverable || n.Store != "acme-shop" || n.Task != taskB || n.From != api.FromAgent ||
		!strings.HasPrefix(n.Reason, "agent says: ") || !strings.Contains(n.Reason, "unrecoverable") || n.URL != "http://"+m.uiAddr+"/store/acme-shop" {
		t.Errorf("the wedge's notification %+v; want the store, task, the shim's message as the agent's and the store page", n)
	}
	m.cli("handoff", "done", h.ID)
	if code := agent.exit(t, 10*time.Second); code != 0 || agent.stdout.String() != "(the person left no note)\n" {
		t.Errorf("done without a note: exit %d, stdout %q", code, agent.stdout.String())
	}
	if metrics := m.metrics(); !strings.Contains(metrics, "vibe_notify_sent_total 2\n") {
		t.Errorf("/metrics lacks vibe_notify_sent_total 2:\n%s", grepLines(metrics, "vibe_notify"))
	}
}

// TestNotifyURLThatHangsOrFailsNeverDelaysTheAgent: a receiver that never answers, or answers 500, costs
// the agents nothing: the handoff is registered and the wedged session gives up in their usual time, and
// the failures are counted.
func TestNotifyURLThatHangsOrFailsNeverDelaysTheAgent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ name string }{{"hangs"}, {"500"}} {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{}) // closed when the test ends: the hanging receiver lets go
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tt.name == "500" {
					http.Error(w, "down", http.StatusInternalServerError)
					return
				}
				io.Copy(io.Discard, r.Body) // so the server notices the manager giving up (r.Context)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}))
			t.Cleanup(func() { close(release); srv.Close() })
			m := startManager(t, "VIBE_NOTIFY_URL="+srv.URL, "VIBE_CALL_TIMEOUT_S=1")
			m.cli("store", "add", "Acme Shop")
			for range 3 { // more than the sender can get through while the receiver hangs
				began := time.Now()
				agent := m.askHuman("acme-shop", taskA, "--ask-human", "pick a carrier", "--wait", "60")
				h := m.pending("acme-shop-a1a1a1a1")
				if took := time.Since(began); took > 3*time.Second {
					t.Errorf("registering a handoff took %v with a receiver that %s; want no wait for it", took, tt.name)
				}
				m.cli("handoff", "done", h.ID)
				if code := agent.exit(t, 10*time.Second); code != 0 {
					t.Errorf("the agent exited %d; want 0", code)
				}
			}
			began := time.Now()
			m.wedge(taskB)
			// Two 1 s calls, their kill grace and one reload: a receiver that waits would add 5 s per attempt.
			if took := time.Since(began); took > 15*time.Second {
				t.Errorf("the two wedged calls took %v with a receiver that %s; want their own time only", took, tt.name)
			}
			if tt.name == "500" {
				testkit.WaitFor(t, 30*time.Second, "the failed notifications to be counted", func() bool {
					return strings.Contains(m.metrics(), `vibe_notify_failures_total{reason="gave_up"} 4`)
				})
				if log := m.log.String(); !strings.Contains(log, "could not deliver a notification to VIBE_NOTIFY_URL") {
					t.Errorf("the manager did not log the failed notifications")
				}
			}
		})
	}
}

func TestNotifyURLInvalidStopsStartUp(t *testing.T) {
	t.Parallel()
	bins := builtBinaries(t)
	home := t.TempDir()
	cmd := exec.Command(bins.vibe, "serve")
	cmd.Env = []string{"HOME=" + home, "VIBE_HOME=" + home, "PATH=/usr/bin:/bin", "VIBE_UI_ADDR=off",
		"VIBE_NOTIFY_URL=hooks.example.com/vibe"}
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "VIBE_NOTIFY_URL") || !strings.Contains(string(out), "http(s) URL") {
		t.Errorf("serve with VIBE_NOTIFY_URL=hooks.example.com/vibe: %v %s; want it refused, naming the variable", err, out)
	}
}

// metrics is the manager's /metrics text.
func (m *managed) metrics() string {
	m.t.Helper()
	return testkit.Metrics(m.t, filepath.Join(m.home, api.SocketRel))
}

func grepLines(text, substr string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, substr) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
