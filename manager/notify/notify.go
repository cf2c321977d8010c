// Package notify POSTs the events that need a person to VIBE_NOTIFY_URL, from one goroutine, bounded and
// retried, so that nothing noting an event ever waits for the receiver.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
)

// notifyKinds are the events a person is told about at VIBE_NOTIFY_URL: each needs someone.
var notifyKinds = map[string]bool{
	api.EventHandoffRequested:   true,
	api.EventWedgeUnrecoverable: true,
	api.EventBudgetSpent:        true,
}

// Bounds of a notification: each POST is bounded by notifyTimeout and tried notifyAttempts times in all,
// waiting notifyBackoff, then twice that, … in between.
const (
	notifyTimeout  = 5 * time.Second
	notifyAttempts = 4
	notifyBackoff  = time.Second
)

// notifyQueue is how many of the manager's own notifications and handoffs may wait for the sender: a burst
// (every store's budget spent at once, a dozen agents asking at the same moment) fits; beyond it the newest
// is dropped, logged and counted, because noting an event may happen under a store's lock and must never
// wait for a web server. reportQueue is the same for the shims' reports, which wait in a queue of their own
// and go only when none of the others waits: an agent's flood of reports never delays or drops another
// store's handoff.
const (
	notifyQueue = 64
	reportQueue = 16
)

// AgentSays begins a notification's reason that is an agent's words, not the manager's.
const AgentSays = "agent says: "

// Notification is the JSON body POSTed to VIBE_NOTIFY_URL.
type Notification struct {
	Kind    string    `json:"kind"`  // handoff_requested, wedge_unrecoverable or relaunch_budget_spent
	Store   string    `json:"store"` // the store's slug, "web" for the web browser
	Task    string    `json:"task,omitempty"`
	Session string    `json:"bu_name,omitempty"`
	Reason  string    `json:"reason"` // what happened, or the agent's words after AgentSays
	From    string    `json:"from"`   // whose words Reason holds: api.FromManager or api.FromAgent
	Handoff string    `json:"handoff,omitempty"`
	URL     string    `json:"url,omitempty"` // where to act in the web UI; empty with the UI off
	At      time.Time `json:"at"`
}

// Sender POSTs notifications to one URL from one goroutine (run), so nothing that notes an event ever
// waits for the receiver. Its zero url disables it.
type Sender struct {
	url      string
	client   *http.Client
	log      zerolog.Logger
	queue    chan api.Event                                // the manager's own and the handoffs'
	reports  chan api.Event                                // the shims' reports (api.ShimEventKind)
	describe func(context.Context, api.Event) Notification // the payload, built in the sender (it reads state)
	timeout  time.Duration                                 // notifyTimeout; tests shorten it
	backoff  time.Duration                                 // notifyBackoff; tests shorten it

	sent     prometheus.Counter
	failures *prometheus.CounterVec
}

func New(url string, log zerolog.Logger, describe func(context.Context, api.Event) Notification) *Sender {
	n := &Sender{url: url, client: &http.Client{}, log: log, queue: make(chan api.Event, notifyQueue),
		reports:  make(chan api.Event, reportQueue),
		describe: describe, timeout: notifyTimeout, backoff: notifyBackoff,
		sent: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vibe_notify_sent_total", Help: "Notifications VIBE_NOTIFY_URL accepted (a 2xx answer).",
		}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vibe_notify_failures_total",
			Help: "Notifications given up on: after every attempt failed (gave_up), or dropped with the queue full (queue_full).",
		}, []string{"reason"}),
	}
	n.failures.WithLabelValues("gave_up")
	n.failures.WithLabelValues("queue_full")
	return n
}

// Enqueue hands ev to the sender without waiting, in the shims' reports' queue or the other; it drops ev
// when that queue is full.
func (n *Sender) Enqueue(ev api.Event) {
	if n.url == "" || !notifyKinds[ev.Kind] {
		return
	}
	q := n.queue
	if api.ShimEventKind(ev.Kind) {
		q = n.reports
	}
	select {
	case q <- ev:
	default:
		n.failures.WithLabelValues("queue_full").Inc()
		n.log.Error().Str("kind", ev.Kind).Int("queue", cap(q)).Msg("notification dropped: the queue to VIBE_NOTIFY_URL is full")
	}
}

// next is the next notification to send: the manager's own and the handoffs' first, a shim's report only
// when none of them waits; ok is false once ctx ends.
func (n *Sender) next(ctx context.Context) (ev api.Event, ok bool) {
	select {
	case ev := <-n.queue:
		return ev, true
	default:
	}
	select {
	case ev := <-n.queue:
		return ev, true
	case ev := <-n.reports:
		return ev, true
	case <-ctx.Done():
		return api.Event{}, false
	}
}

// run sends queued notifications until ctx ends; what is still queued then is dropped (said in the log).
func (n *Sender) Run(ctx context.Context) {
	if n.url == "" {
		return
	}
	for {
		ev, ok := n.next(ctx)
		if !ok {
			if left := len(n.queue) + len(n.reports); left > 0 {
				n.log.Warn().Int("dropped", left).Msg("the manager is stopping: queued notifications are not sent")
			}
			return
		}
		n.send(ctx, n.describe(ctx, ev))
	}
}

// send POSTs one notification, retrying with backoff; the last failure is logged and counted.
func (n *Sender) send(ctx context.Context, note Notification) {
	body, err := json.Marshal(note)
	if err != nil {
		panic(err) // a Notification always encodes
	}
	wait := n.backoff
	for attempt := 1; ; attempt++ {
		err = n.post(ctx, body)
		if err == nil {
			n.sent.Inc()
			return
		}
		if attempt == notifyAttempts || ctx.Err() != nil {
			break
		}
		n.log.Debug().Err(err).Int("attempt", attempt).Str("kind", note.Kind).Msg("notification failed; retrying")
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
		wait *= 2
	}
	n.failures.WithLabelValues("gave_up").Inc()
	n.log.Error().Err(err).Str("kind", note.Kind).Str("store", note.Store).Int("attempts", notifyAttempts).
		Msg("could not deliver a notification to VIBE_NOTIFY_URL")
}

func (n *Sender) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, n.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "vibe-browser")
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("VIBE_NOTIFY_URL answered %s", resp.Status)
	}
	return nil
}

// Collectors are the sender's Prometheus series: notifications sent, and failures by reason.
func (n *Sender) Collectors() []prometheus.Collector {
	return []prometheus.Collector{n.sent, n.failures}
}
