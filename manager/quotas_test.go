package manager_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/config"
)

// quotaHits is vibe_quota_hits_total{quota=q} on d's /metrics.
func quotaHits(t *testing.T, d *daemon, q string) int {
	t.Helper()
	text := testkit.Metrics(t, filepath.Join(d.home, api.SocketRel))
	m := regexp.MustCompile(`(?m)^vibe_quota_hits_total\{quota="` + q + `"\} (\d+)$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no vibe_quota_hits_total{quota=%q} in /metrics:\n%s", q, text)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// A task's reports and handoffs are bounded per minute (VIBE_TASK_EVENTS_PER_MIN): past it they are
// refused with 429 naming the knob, counted, while another task still reports.
func TestTaskEventsPerMinute(t *testing.T) {
	d := startDaemon(t, map[string]string{"VIBE_TASK_EVENTS_PER_MIN": "5"}, true)
	const task, other = "a1b2c3d4-0001", "b2c3d4e5-0002"
	acme, _, tok := twoStores(t, d, task)
	a := &api.Client{Socket: filepath.Join(d.home, api.AgentSocketRel), Token: tok.Token}
	wedge := func(c *api.Client, task string) error {
		return c.ReportEvent(bg, api.Event{Kind: api.EventWedgeUnrecoverable, StoreID: acme.ID, TaskID: task,
			BUName: "acme-" + task[:8], Message: "wedged"})
	}
	for i := range 4 {
		if err := wedge(a, task); err != nil {
			t.Fatalf("report %d: %v", i+1, err)
		}
	}
	h, err := a.CreateHandoff(bg, api.HandoffRequest{Kind: api.KindStore, StoreID: acme.ID, ClientID: task,
		BUName: "acme-a1b2c3d4", TaskID: task, Reason: "a captcha", WaitS: 60})
	if err != nil {
		t.Fatalf("the fifth, a handoff: %v", err)
	}
	wantAPIError(t, wedge(a, task), http.StatusTooManyRequests, "VIBE_TASK_EVENTS_PER_MIN=5")
	_, err = a.CreateHandoff(bg, api.HandoffRequest{Kind: api.KindStore, StoreID: acme.ID, ClientID: task,
		BUName: "acme-a1b2c3d4", TaskID: task, Reason: "another", WaitS: 60})
	wantAPIError(t, err, http.StatusTooManyRequests, "its quota (VIBE_TASK_EVENTS_PER_MIN=5)")
	if err := wedge(d.client, other); err != nil {
		t.Errorf("another task's report: %v", err)
	}
	if _, err := a.CancelHandoff(bg, h.ID); err != nil {
		t.Errorf("the task's own handoff is still its to cancel: %v", err)
	}
	if n := quotaHits(t, d, "events_per_minute"); n != 2 {
		t.Errorf("vibe_quota_hits_total{quota=events_per_minute} = %d; want 2", n)
	}
}

// A task waits on at most VIBE_HANDOFF_MAX handoffs at once: one more is refused with 429 naming the knob,
// while another task still asks; an answered one frees its place.
func TestTaskOpenHandoffs(t *testing.T) {
	d := startDaemon(t, nil, true)
	const task, other = "a1b2c3d4-0001", "b2c3d4e5-0002"
	acme, _, tok := twoStores(t, d, task)
	a := &api.Client{Socket: filepath.Join(d.home, api.AgentSocketRel), Token: tok.Token}
	ask := func(c *api.Client, task string, i int) (api.Handoff, error) {
		return c.CreateHandoff(bg, api.HandoffRequest{Kind: api.KindStore, StoreID: acme.ID, ClientID: task,
			BUName: "acme-" + task[:8], TaskID: task, Reason: fmt.Sprint("step ", i), WaitS: 600})
	}
	var first api.Handoff
	for i := range 3 {
		h, err := ask(a, task, i)
		if err != nil {
			t.Fatalf("handoff %d: %v", i+1, err)
		}
		if i == 0 {
			first = h
		}
	}
	_, err := ask(a, task, 4)
	wantAPIError(t, err, http.StatusTooManyRequests, "already waits on 3 handoffs, its quota (VIBE_HANDOFF_MAX=3)")
	if _, err := ask(d.client, other, 1); err != nil {
		t.Errorf("another task's handoff: %v", err)
	}
	if _, err := d.client.AnswerHandoff(bg, first.ID, api.HandoffAnswer{Status: api.HandoffDone}); err != nil {
		t.Fatal(err)
	}
	if _, err := ask(a, task, 5); err != nil {
		t.Errorf("a handoff after one was answered: %v", err)
	}
	if n := quotaHits(t, d, "open_handoffs"); n != 1 {
		t.Errorf("vibe_quota_hits_total{quota=open_handoffs} = %d; want 1", n)
	}
}

// A call report is cut to SPEC §15's bounds whatever the agent sends (1 MB of code keeps its first 64 KiB,
// marked), and a task's timeline stops taking its calls at VIBE_TIMELINE_MAX_MB with 429 naming the knob,
// said once in the timeline, while another task's calls are still recorded.
func TestCallReportsAreCutAndBoundedPerTask(t *testing.T) {
	d := startDaemon(t, map[string]string{"VIBE_TIMELINE_MAX_MB": "1"}, true)
	const task, other = "a1b2c3d4-0001", "b2c3d4e5-0002"
	_, _, tok := twoStores(t, d, task)
	a := &api.Client{Socket: filepath.Join(d.home, api.AgentSocketRel), Token: tok.Token}
	huge := api.CallReport{Client: task, Session: "acme-a1b2c3d4", Outcome: api.CallOK,
		Code: strings.Repeat("x", 1_000_000), Stdout: strings.Repeat("o", 20_000), Stderr: "short"} // within the API's 1 MiB body
	if err := a.ReportCall(bg, task, huge); err != nil {
		t.Fatalf("a report of 1 MB of code: %v", err)
	}
	var tl api.Timeline
	testkit.WaitFor(t, 10*time.Second, "the call's entry", func() bool {
		var err error
		tl, err = d.client.Timeline(bg, task, 0, false)
		return err == nil && len(tl.Entries) > 0
	})
	c := tl.Entries[0].Call
	if c == nil || len(c.Code) != api.CallCodeMax || !c.CodeCut || len(c.Stdout) != api.CallOutputMax || !c.StdoutCut ||
		c.Stderr != "short" || c.StderrCut || tl.Entries[0].From != api.FromAgent {
		t.Fatalf("the entry of 1 MB of code: %+v; want %d bytes of code and %d of stdout, each marked cut, from the agent",
			tl.Entries[0], api.CallCodeMax, api.CallOutputMax)
	}
	if n := quotaHits(t, d, "call_report_cut"); n != 1 {
		t.Errorf("vibe_quota_hits_total{quota=call_report_cut} = %d; want 1", n)
	}

	var refused error
	for i := 0; i < 40 && refused == nil; i++ {
		refused = a.ReportCall(bg, task, huge)
	}
	wantAPIError(t, refused, http.StatusTooManyRequests, "its quota (VIBE_TIMELINE_MAX_MB=1)")
	if _, err := d.client.MintTaskToken(bg, other, "acme"); err != nil {
		t.Fatal(err)
	}
	if err := d.client.ReportCall(bg, other, api.CallReport{Client: other, Outcome: api.CallOK, Code: "print(1)"}); err != nil {
		t.Errorf("another task's call: %v", err)
	}
	if n := quotaHits(t, d, "timeline_bytes"); n < 1 {
		t.Errorf("vibe_quota_hits_total{quota=timeline_bytes} = %d; want the refusal counted", n)
	}
	tl, err := d.client.Timeline(bg, task, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	faults := 0
	for _, e := range tl.Entries {
		if e.Fault != nil && e.Fault.What == api.FaultQuota {
			faults++
		}
	}
	if faults != 1 || len(tl.Entries) > 20 {
		t.Errorf("%d entries, %d quota faults; want the calls up to 1 MiB and the fault said once", len(tl.Entries), faults)
	}
}

// One uid holds at most VIBE_AGENT_CONN_MAX connections to agent.sock: one more is answered 429 naming the
// knob and closed, while the owner's socket answers; connections that stay silent are closed after
// VIBE_AGENT_IDLE_S, and then the task's own calls are served again.
func TestAgentSocketConnectionsPerUID(t *testing.T) {
	d := startDaemon(t, map[string]string{"VIBE_AGENT_CONN_MAX": "4", "VIBE_AGENT_IDLE_S": "1"}, true)
	const task = "a1b2c3d4-0001"
	acme, _, tok := twoStores(t, d, task)
	sock := filepath.Join(d.home, api.AgentSocketRel)
	var idle []net.Conn
	for range 4 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		idle = append(idle, c)
	}
	testkit.WaitFor(t, 5*time.Second, "the four to be counted", func() bool {
		return strings.Contains(testkit.Metrics(t, filepath.Join(d.home, api.SocketRel)), "vibe_agent_connections 4")
	})
	over, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer over.Close()
	over.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, _ := io.ReadAll(over)
	if !strings.HasPrefix(string(answer), "HTTP/1.1 429 ") || !strings.Contains(string(answer), "its quota (VIBE_AGENT_CONN_MAX=4)") {
		t.Errorf("the fifth connection got %q; want 429 naming VIBE_AGENT_CONN_MAX, then closed", answer)
	}
	if _, err := d.client.Health(bg); err != nil {
		t.Errorf("the owner's socket with agent.sock at its cap: %v", err)
	}
	if n := quotaHits(t, d, "agent_connections"); n != 1 {
		t.Errorf("vibe_quota_hits_total{quota=agent_connections} = %d; want 1", n)
	}
	for _, c := range idle { // silent: the manager closes each within the idle time
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("an idle connection read %d, %v; want it closed by the manager (EOF)", n, err)
		}
	}
	a := &api.Client{Socket: sock, Token: tok.Token}
	if err := a.ReportEvent(bg, api.Event{Kind: api.EventWedgeUnrecoverable, StoreID: acme.ID, TaskID: task,
		BUName: "acme-a1b2c3d4"}); err != nil {
		t.Errorf("the task's report once the idle ones were closed: %v", err)
	}
}

func TestQuotaKnobs(t *testing.T) {
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": t.TempDir()}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TimelineMaxMB != 200 || cfg.DownloadMaxMB != 1024 || cfg.HandoffMax != 3 || cfg.TaskEventsPerMin != 20 ||
		cfg.AgentConnMax != 64 || cfg.AgentIdle != 30*time.Second {
		t.Errorf("quota defaults: timeline %d MB, downloads %d MB, handoffs %d, events %d/min, agent.sock %d per uid, idle %v",
			cfg.TimelineMaxMB, cfg.DownloadMaxMB, cfg.HandoffMax, cfg.TaskEventsPerMin, cfg.AgentConnMax, cfg.AgentIdle)
	}
	for _, tt := range []struct{ name, value, want string }{
		{"VIBE_DOWNLOAD_MAX_MB", "0", "from 1 to"},
		{"VIBE_HANDOFF_MAX", "0", "from 1 to 1000"},
		{"VIBE_TASK_EVENTS_PER_MIN", "lots", "integer"},
		{"VIBE_AGENT_CONN_MAX", "0", "from 1 to"},
		{"VIBE_AGENT_IDLE_S", "0", "from 1 to 3600"},
	} {
		_, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": t.TempDir(), tt.name: tt.value}[k] })
		if err == nil || !strings.Contains(err.Error(), tt.name) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FromEnv(%s=%q) = %v; want an error naming %s and %q", tt.name, tt.value, err, tt.name, tt.want)
		}
	}
}
