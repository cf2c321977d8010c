package manager_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/config"
	"vibebrowser/manager/notify"
	"vibebrowser/state"
)

const handoffTask = "a1b2c3d4-0000-4000-8000-00000000000a"

// TestHandoffKnobDefaults: the refusals are in TestInvalidKnobsNameTheVariable.
func TestHandoffKnobDefaults(t *testing.T) {
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": t.TempDir()}[k] })
	if err != nil || cfg.HandoffWaitMax != time.Hour || cfg.NotifyURL != "" {
		t.Errorf("defaults: wait max %v, notify URL %q, %v; want 1h and none", cfg.HandoffWaitMax, cfg.NotifyURL, err)
	}
	cfg, err = config.FromEnv(func(k string) string {
		return map[string]string{"VIBE_HOME": t.TempDir(), "VIBE_NOTIFY_URL": "https://hooks.example.com/x?k=1"}[k]
	})
	if err != nil || cfg.NotifyURL != "https://hooks.example.com/x?k=1" {
		t.Errorf("VIBE_NOTIFY_URL https = %q, %v; want it kept", cfg.NotifyURL, err)
	}
}

// waitFor calls WaitHandoff in the background, as a waiting shim does.
func waitFor(c *api.Client, id string) <-chan api.Handoff {
	out := make(chan api.Handoff, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), api.HandoffPoll+10*time.Second)
		defer cancel()
		h, err := c.WaitHandoff(ctx, id)
		if err != nil {
			h.Status = "error: " + err.Error()
		}
		out <- h
	}()
	return out
}

func receive(t *testing.T, ch <-chan api.Handoff, within time.Duration) api.Handoff {
	t.Helper()
	select {
	case h := <-ch:
		return h
	case <-time.After(within):
		t.Fatalf("the wait did not answer within %v", within)
		return api.Handoff{}
	}
}

func TestHandoffLifecycle(t *testing.T) {
	d := startDaemon(t, map[string]string{"VIBE_HANDOFF_WAIT_MAX_S": "3"}, true)
	c := d.client
	store, err := c.CreateStore(bg, api.StoreSpec{Name: "Acme Shop"})
	if err != nil {
		t.Fatal(err)
	}
	ask := api.HandoffRequest{Kind: api.KindStore, StoreID: store.ID, ClientID: handoffTask, BUName: "acme-shop-a1b2c3d4",
		TaskID: handoffTask, Reason: "solve the captcha", WaitS: 900}
	h, err := c.CreateHandoff(bg, ask)
	if err != nil {
		t.Fatal(err)
	}
	if h.Status != api.HandoffPending || h.Store != "acme-shop" || h.WaitS != 3 || h.URL != "" || len(h.ID) != 12 {
		t.Errorf("created %+v; want pending on acme-shop, the wait cut to VIBE_HANDOFF_WAIT_MAX_S=3, no UI link with the UI off", h)
	}
	if task, err := c.GetTask(bg, handoffTask); err != nil || task.Status != "running" || task.Store != store.ID {
		t.Errorf("the asking task = %+v, %v; want it registered as running on the store, as a call does", task, err)
	}
	st, err := c.Status(bg)
	if err != nil || len(st.Handoffs) != 1 || st.Handoffs[0].ID != h.ID || st.Handoffs[0].Reason != "solve the captcha" {
		t.Errorf("status handoffs = %+v, %v; want the pending one", st.Handoffs, err)
	}

	// Done with a note reaches the waiter at once.
	waiting := waitFor(c, h.ID)
	answered, err := c.AnswerHandoff(bg, h.ID, api.HandoffAnswer{Status: api.HandoffDone, Note: "  solved; code 123456  "})
	if err != nil || answered.Status != api.HandoffDone || answered.Note != "solved; code 123456" {
		t.Fatalf("answer = %+v, %v; want done with the trimmed note", answered, err)
	}
	if got := receive(t, waiting, 2*time.Second); got.Status != api.HandoffDone || got.Note != "solved; code 123456" {
		t.Errorf("the waiter got %+v; want done with the note", got)
	}
	_, err = c.AnswerHandoff(bg, h.ID, api.HandoffAnswer{Status: api.HandoffCantHelp})
	wantAPIError(t, err, http.StatusConflict, "already marked it done")

	// Nobody answers: the wait answers timed_out at the deadline.
	web := ask
	web.Kind, web.StoreID, web.TaskID, web.ClientID, web.BUName, web.WaitS = api.KindWeb, "", "", "manual", "web", 1
	late, err := c.CreateHandoff(bg, web)
	if err != nil || late.Store != "web" || late.WaitS != 1 {
		t.Fatalf("web handoff = %+v, %v; want one of the web browser waiting 1 s", late, err)
	}
	began := time.Now()
	if got := receive(t, waitFor(c, late.ID), 5*time.Second); got.Status != api.HandoffTimedOut {
		t.Errorf("the waiter got %+v; want timed_out", got)
	} else if took := time.Since(began); took > 2500*time.Millisecond {
		t.Errorf("timed out after %v; want at the 1 s deadline", took)
	}
	_, err = c.AnswerHandoff(bg, late.ID, api.HandoffAnswer{Status: api.HandoffDone})
	wantAPIError(t, err, http.StatusConflict, "nobody answered within the agent's wait")

	// Can't help, and a cancel.
	cant, _ := c.CreateHandoff(bg, ask)
	waiting = waitFor(c, cant.ID)
	if _, err := c.AnswerHandoff(bg, cant.ID, api.HandoffAnswer{Status: api.HandoffCantHelp, Note: "needs the owner's phone"}); err != nil {
		t.Fatal(err)
	}
	if got := receive(t, waiting, 2*time.Second); got.Status != api.HandoffCantHelp || got.Note != "needs the owner's phone" {
		t.Errorf("the waiter got %+v; want cant_help with the note", got)
	}
	gone, _ := c.CreateHandoff(bg, ask)
	if got, err := c.CancelHandoff(bg, gone.ID); err != nil || got.Status != api.HandoffCancelled {
		t.Errorf("cancel = %+v, %v; want cancelled", got, err)
	}
	_, err = c.AnswerHandoff(bg, gone.ID, api.HandoffAnswer{Status: api.HandoffDone})
	wantAPIError(t, err, http.StatusConflict, "the agent stopped waiting")

	refusals := []struct {
		name   string
		call   func() error
		status int
		want   string
	}{
		{"empty reason", func() error { r := ask; r.Reason = " \n"; _, err := c.CreateHandoff(bg, r); return err }, 400, "reason is empty"},
		{"control character", func() error { r := ask; r.Reason = "a\x07"; _, err := c.CreateHandoff(bg, r); return err }, 400, "control character"},
		{"unknown store", func() error { r := ask; r.StoreID = "nope"; _, err := c.CreateHandoff(bg, r); return err }, 404, "no longer exists"},
		{"bad client", func() error { r := ask; r.ClientID = "a b"; _, err := c.CreateHandoff(bg, r); return err }, 400, "client_id"},
		{"bad kind", func() error { r := ask; r.Kind = "both"; _, err := c.CreateHandoff(bg, r); return err }, 400, "want store or web"},
		{"bad answer", func() error {
			_, err := c.AnswerHandoff(bg, h.ID, api.HandoffAnswer{Status: "maybe"})
			return err
		}, 400, "want done or cant_help"},
		{"unknown handoff", func() error {
			_, err := c.AnswerHandoff(bg, "000000000000", api.HandoffAnswer{Status: api.HandoffDone})
			return err
		}, 404, "not found"},
		{"bad list filter", func() error { _, err := c.ListHandoffs(bg, "open"); return err }, 400, "want one of pending"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) { wantAPIError(t, tt.call(), tt.status, tt.want) })
	}
	if _, err := c.WaitHandoff(bg, "000000000000"); !errors.Is(err, api.ErrHandoffGone) {
		t.Errorf("WaitHandoff(unknown) = %v; want ErrHandoffGone", err)
	}

	all, err := c.ListHandoffs(bg, "")
	if err != nil || len(all) != 4 {
		t.Fatalf("ListHandoffs(all) = %+v, %v; want the four", all, err)
	}
	if pending, err := c.ListHandoffs(bg, api.HandoffPending); err != nil || len(pending) != 0 {
		t.Errorf("ListHandoffs(pending) = %+v, %v; want none left", pending, err)
	}
	metrics := testkit.Metrics(t, filepath.Join(d.home, api.SocketRel))
	for _, line := range []string{`vibe_handoffs{status="pending"} 0`, `vibe_handoffs{status="done"} 1`,
		`vibe_handoffs{status="timed_out"} 1`, `vibe_handoffs{status="cant_help"} 1`, `vibe_handoffs{status="cancelled"} 1`,
		`vibe_events_total{kind="handoff_requested"} 4`} {
		if !strings.Contains(metrics, line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}
	kinds := map[string]int{}
	events, _ := c.Events(bg)
	for _, ev := range events {
		kinds[ev.Kind]++
		if strings.HasPrefix(ev.Kind, "handoff_") && ev.Handoff == "" {
			t.Errorf("event %+v names no handoff", ev)
		}
	}
	if kinds[api.EventHandoffRequested] != 4 || kinds[api.EventHandoffAnswered] != 2 || kinds[api.EventHandoffTimedOut] != 1 ||
		kinds[api.EventHandoffCancelled] != 1 {
		t.Errorf("events by kind %v; want 4 requested, 2 answered, 1 timed out, 1 cancelled", kinds)
	}
}

// TestHandoffSurvivesRestart: a pending handoff is in state, so a new manager on the same home still
// knows it, and one whose wait ran out while no manager ran is timed out when the next one starts.
func TestHandoffSurvivesRestart(t *testing.T) {
	cfg := daemonConfig(t, nil, true)
	d := runDaemon(t, cfg)
	ask := api.HandoffRequest{Kind: api.KindWeb, ClientID: "manual", BUName: "web", Reason: "approve the refund"}
	kept, err := d.client.CreateHandoff(bg, ask)
	if err != nil {
		t.Fatal(err)
	}
	ask.WaitS = 1
	lapsed, err := d.client.CreateHandoff(bg, ask)
	if err != nil {
		t.Fatal(err)
	}
	d.stop(t)
	time.Sleep(1100 * time.Millisecond) // the lapsed one's deadline passes while no manager runs
	d = runDaemon(t, cfg)
	if got, err := d.client.GetHandoff(bg, kept.ID); err != nil || got.Status != api.HandoffPending || got.Reason != "approve the refund" {
		t.Errorf("after a restart: %+v, %v; want the handoff still pending", got, err)
	}
	testkit.WaitFor(t, 5*time.Second, "the lapsed handoff to time out at start", func() bool {
		got, err := d.client.GetHandoff(bg, lapsed.ID)
		return err == nil && got.Status == api.HandoffTimedOut
	})
}

func TestNotifyURLGetsHandoffsAndWedges(t *testing.T) {
	var mu sync.Mutex
	var got []notify.Notification
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n notify.Notification
		if err := json.NewDecoder(r.Body).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	d := startDaemon(t, map[string]string{"VIBE_NOTIFY_URL": srv.URL + "/hook"}, true)
	store, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme Shop"})
	if err != nil {
		t.Fatal(err)
	}
	h, err := d.client.CreateHandoff(bg, api.HandoffRequest{Kind: api.KindStore, StoreID: store.ID, ClientID: handoffTask,
		BUName: "acme-shop-a1b2c3d4", TaskID: handoffTask, Reason: "enter the SMS code"})
	if err != nil {
		t.Fatal(err)
	}
	report := func(kind string) error {
		return d.client.ReportEvent(bg, api.Event{Kind: kind, StoreID: store.ID, TaskID: handoffTask,
			BUName: "acme-shop-a1b2c3d4", Message: "two timeouts in a row"})
	}
	// The manager's own kinds come from the manager alone, even on the owner's socket.
	wantAPIError(t, report(api.EventBudgetSpent), http.StatusForbidden, "not one a shim reports")
	if err := report(api.EventWedgeUnrecoverable); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "two notifications", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) >= 2
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("the receiver got %+v; want the handoff and the wedge only", got)
	}
	if n := got[0]; n.Kind != api.EventHandoffRequested || n.Store != "acme-shop" || n.Task != handoffTask ||
		n.Reason != "agent says: enter the SMS code" || n.From != api.FromAgent || n.Handoff != h.ID || n.At.IsZero() {
		t.Errorf("handoff notification %+v; want kind, store slug, task, the reason as the agent's, handoff id and time", n)
	}
	if n := got[1]; n.Kind != api.EventWedgeUnrecoverable || n.Store != "acme-shop" ||
		n.Reason != "agent says: two timeouts in a row" || n.From != api.FromAgent {
		t.Errorf("wedge notification %+v; want the store's slug and the shim's message as the agent's", n)
	}
}

// TestHandoffStatusesAreOneList: the API's statuses (what the shim and the CLI read, without state) are
// state's, one for one.
func TestHandoffStatusesAreOneList(t *testing.T) {
	fromAPI := []string{api.HandoffPending, api.HandoffDone, api.HandoffCantHelp, api.HandoffTimedOut, api.HandoffCancelled}
	var st []string
	for _, s := range state.HandoffStatuses {
		st = append(st, string(s))
	}
	if !slices.Equal(fromAPI, st) {
		t.Errorf("api's handoff statuses %q differ from state's %q", fromAPI, st)
	}
}
