package notify

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// counted is the value of a counter (summed over its series).
func counted(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		for _, m := range f.GetMetric() {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// testNotifier is a Sender of url with short bounds, running until the test ends.
func testNotifier(t *testing.T, url string) *Sender {
	t.Helper()
	n := New(url, testkit.Log(t), func(_ context.Context, ev api.Event) Notification {
		return Notification{Kind: ev.Kind, Store: ev.StoreID, Reason: ev.Message, Handoff: ev.Handoff, At: ev.At}
	})
	n.timeout, n.backoff = 200*time.Millisecond, 10*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { n.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return n
}

func TestNotifierSendsTheKindsThatNeedAPerson(t *testing.T) {
	var mu sync.Mutex
	var got []Notification
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n Notification
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&n) != nil {
			http.Error(w, "want a JSON POST", http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, n)
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	n := testNotifier(t, srv.URL)
	for _, kind := range []string{api.EventBrowserDied, api.EventHandoffRequested, api.EventIdleStop,
		api.EventWedgeUnrecoverable, api.EventHandoffAnswered, api.EventBudgetSpent} {
		n.Enqueue(api.Event{Kind: kind, StoreID: "shop", Message: "reason of " + kind})
	}
	testkit.WaitFor(t, 5*time.Second, "three notifications", func() bool { return counted(t, n.sent) == 3 })
	mu.Lock()
	defer mu.Unlock()
	// The shim's report waits in a queue of its own, behind the others: only the set is sure.
	want := []string{api.EventHandoffRequested, api.EventBudgetSpent, api.EventWedgeUnrecoverable}
	slices.SortFunc(got, func(a, b Notification) int { return strings.Compare(a.Kind, b.Kind) })
	if len(got) != len(want) {
		t.Fatalf("the receiver got %+v; want only %v", got, want)
	}
	for i, kind := range want {
		if got[i].Kind != kind || got[i].Reason != "reason of "+kind || got[i].Store != "shop" {
			t.Errorf("notification %d = %+v; want %s of shop with its reason", i, got[i], kind)
		}
	}
}

// A flood of shims' reports (an agent's) fills only their own queue: a handoff asked meanwhile is
// neither dropped nor sent after them.
func TestNotifierSendsHandoffsAheadOfAFloodOfReports(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n Notification
		json.NewDecoder(r.Body).Decode(&n)
		mu.Lock()
		got = append(got, n.Kind)
		mu.Unlock()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	n := testNotifier(t, srv.URL)
	n.timeout = time.Minute // the sender holds the first report until release
	sent := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(got)
	}
	flood := func() { n.Enqueue(api.Event{Kind: api.EventWedgeUnrecoverable, Message: "flood"}) }
	flood()
	testkit.WaitFor(t, 10*time.Second, "the sender to hold the first report", func() bool { return sent() == 1 })
	for range 5 * reportQueue {
		flood()
	}
	n.Enqueue(api.Event{Kind: api.EventHandoffRequested, Message: "the victim's handoff"})
	if dropped := counted(t, n.failures.WithLabelValues("queue_full")); dropped != 4*reportQueue {
		t.Errorf("dropped %v; want only the reports past their queue (%d)", dropped, 4*reportQueue)
	}
	close(release)
	testkit.WaitFor(t, 10*time.Second, "two notifications", func() bool { return sent() >= 2 })
	mu.Lock()
	defer mu.Unlock()
	if got[1] != api.EventHandoffRequested {
		t.Errorf("sent %v; want the handoff right after the report the sender held", got)
	}
}

func TestNotifierRetriesThenGivesUp(t *testing.T) {
	tests := []struct {
		name     string
		failures int32 // answers that fail (500) before one succeeds; notifyAttempts: never; -1: each hangs
		sent     float64
		gaveUp   float64
	}{
		{"500 every time", notifyAttempts, 0, 1},
		{"500 then 200", 2, 1, 0},
		{"hangs every time", -1, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			release := make(chan struct{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				switch {
				case tt.failures < 0:
					select { // past the Sender's timeout: it must give up on this attempt by itself
					case <-release:
					case <-r.Context().Done():
					}
				case n <= tt.failures:
					http.Error(w, "down", http.StatusInternalServerError)
				}
			}))
			t.Cleanup(func() { close(release); srv.Close() })
			n := testNotifier(t, srv.URL)
			began := time.Now()
			n.Enqueue(api.Event{Kind: api.EventHandoffRequested, Message: "help"})
			if took := time.Since(began); took > 50*time.Millisecond {
				t.Errorf("enqueue took %v; want no wait for the receiver", took)
			}
			testkit.WaitFor(t, 10*time.Second, "the notification to end", func() bool {
				return counted(t, n.sent)+counted(t, n.failures.WithLabelValues("gave_up")) == 1
			})
			wantCalls := min(tt.failures+1, notifyAttempts)
			if tt.failures < 0 {
				wantCalls = notifyAttempts
			}
			if got := calls.Load(); got != wantCalls {
				t.Errorf("the receiver was called %d times; want %d", got, wantCalls)
			}
			if s, g := counted(t, n.sent), counted(t, n.failures.WithLabelValues("gave_up")); s != tt.sent || g != tt.gaveUp {
				t.Errorf("sent %v, gave up %v; want %v, %v", s, g, tt.sent, tt.gaveUp)
			}
		})
	}
}

func TestNotifierQueueFullDropsWithoutWaiting(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	n := testNotifier(t, srv.URL)
	n.timeout = time.Minute // the sender is stuck on the first one for the whole test
	began := time.Now()
	for range notifyQueue + 10 {
		n.Enqueue(api.Event{Kind: api.EventBudgetSpent})
	}
	if took := time.Since(began); took > 100*time.Millisecond {
		t.Errorf("%d enqueues took %v; want no wait", notifyQueue+10, took)
	}
	// One is with the sender (or about to be), notifyQueue wait: the rest are dropped.
	if dropped := counted(t, n.failures.WithLabelValues("queue_full")); dropped < 9 || dropped > 10 {
		t.Errorf("dropped %v; want 9 or 10 (the queue holds %d, the sender one)", dropped, notifyQueue)
	}
}

func TestNotifierOffSendsNothing(t *testing.T) {
	n := New("", testkit.Log(t), nil)
	n.Enqueue(api.Event{Kind: api.EventHandoffRequested})
	if len(n.queue) != 0 {
		t.Errorf("a Sender without a URL queued %d notifications; want none", len(n.queue))
	}
	n.Run(context.Background()) // returns at once
}
