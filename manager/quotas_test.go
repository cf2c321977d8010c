package manager_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
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
