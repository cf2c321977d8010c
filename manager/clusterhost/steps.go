package clusterhost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/cluster"
	"vibebrowser/mux"
	"vibebrowser/mux/clientid"
	"vibebrowser/mux/downloads"
)

// The steps of a task's tabs on a store of another host, and the faults of that store's browser, are kept on
// the task's host (SPEC §19 "Routing"). The store's host sends the steps of each client of another host to
// that host, in order, a batch at a time; the task's host records each on the task only if the client is
// that task's and the task uses the store (as Desk.Report checks a call's client). A fault of the store's
// browser (died, relaunched, login restored) is told to every live host, which puts it on the timelines of
// its own active tasks on the store, as the store's host does for its own: the store's host need not know
// which hosts have tasks on it, and a host with none does nothing.

// Step pacing and bounds.
const (
	// stepsQueued bounds the steps waiting for one host: past it new ones are dropped and logged (the
	// timeline is a record for people; it never holds a browser's traffic up, as in the mux).
	stepsQueued = 4096
	// stepsBatch is the most steps one exchange carries.
	stepsBatch = 64
	// stepFieldMax cuts a step's URL and title as they cross (a data: URL may be megabytes), so that a batch
	// stays under stepsBodyMax.
	stepFieldMax = 16 << 10
	// stepsBodyMax bounds a batch's body, as its receiver takes it.
	stepsBodyMax = 4 << 20
	// stepsTries and stepsFirstWait pace the tries of one batch; a batch given up is logged.
	stepsTries     = 3
	stepsFirstWait = 500 * time.Millisecond
	// faultMessageMax cuts a fault's message as it crosses.
	faultMessageMax = 4 << 10
)

// stepWire is a step on the door.
type stepWire struct {
	Client string `json:"client"`
	Tab    string `json:"tab"`
	Kind   string `json:"kind"`
	URL    string `json:"url,omitempty"`
	Title  string `json:"title,omitempty"`
	By     string `json:"by,omitempty"`
	Why    string `json:"why,omitempty"`
	Fault  string `json:"fault,omitempty"` // a stepCut's message
}

// stepCut is the step of a download of the client's cancelled at its task's quota on the store's host: a
// fault on the task's timeline, in order with its tabs' steps.
const stepCut = "download_cut"

// stepKinds are the steps a tab has (mux.TimelineEvent's kinds), and stepCut.
var stepKinds = []string{mux.TabCreated, mux.TabNavigated, mux.TabClosed, mux.HoldTaken, mux.HoldReleased, stepCut}

// stepsTo names a queue of steps: the host they go to and their store.
type stepsTo struct{ host, store string }

// stepQueue is the steps waiting for one host, and whether a goroutine sends them.
type stepQueue struct {
	steps   []stepWire
	dropped int
	sending bool
}

// TabStep sends ev, a step of a tab of a client of another host (ev.Host), to that host, in the background
// and in order.
func (ch *Host) TabStep(sp browsers.Spec, ev mux.TimelineEvent) {
	if ev.Host == "" || ev.Host == ch.host {
		return
	}
	ch.queueStep(stepsTo{host: ev.Host, store: sp.Key}, stepWire{Client: ev.Client, Tab: ev.Tab, Kind: ev.Kind,
		URL: cut(ev.URL, stepFieldMax), Title: cut(ev.Title, stepFieldMax), By: ev.By, Why: ev.Why})
}

// CutStep sends the fault of d, a download of a client of another host (d.Host) cancelled at its task's quota
// here, to that host, in order with its tabs' steps: its task and timeline are there.
func (ch *Host) CutStep(sp browsers.Spec, d downloads.Download, msg string) {
	if d.Host == "" || d.Host == ch.host {
		return
	}
	ch.queueStep(stepsTo{host: d.Host, store: sp.Key}, stepWire{Client: d.ClientID, Kind: stepCut, Fault: cut(msg, faultMessageMax)})
}

// queueStep queues s for to, and starts sending to's queue unless it is being sent.
func (ch *Host) queueStep(to stepsTo, s stepWire) {
	ch.stepsMu.Lock()
	defer ch.stepsMu.Unlock()
	q := ch.steps[to]
	if q == nil {
		q = &stepQueue{}
		ch.steps[to] = q
	}
	if len(q.steps) >= stepsQueued {
		q.dropped++
		return
	}
	q.steps = append(q.steps, s)
	if !q.sending {
		q.sending = ch.spawn(func(ctx context.Context) { ch.sendSteps(ctx, to) })
	}
}

// sendSteps sends to's queue, a batch at a time, until it is empty.
func (ch *Host) sendSteps(ctx context.Context, to stepsTo) {
	for {
		ch.stepsMu.Lock()
		q := ch.steps[to]
		if len(q.steps) == 0 || ctx.Err() != nil {
			delete(ch.steps, to)
			ch.stepsMu.Unlock()
			return
		}
		batch := slices.Clone(q.steps[:min(len(q.steps), stepsBatch)])
		q.steps = q.steps[len(batch):]
		dropped := q.dropped
		q.dropped = 0
		ch.stepsMu.Unlock()
		log := ch.log.With().Str("store", to.store).Str("to", to.host).Logger()
		if dropped > 0 {
			log.Warn().Int("dropped", dropped).Int("queued", stepsQueued).Msg("the steps of another host's clients came faster than they went: steps dropped")
		}
		body, err := json.Marshal(batch)
		if err != nil {
			log.Error().Err(err).Msg("steps of another host's clients")
			continue
		}
		err = tryBackoff(ctx, stepsTries, stepsFirstWait, func() bool { return ch.hosts.Alive(to.host) }, func() error {
			_, err := ch.exchange(ctx, to.host, to.store, kindSteps, struct{}{}, bytes.NewReader(body), int64(len(body)), 1<<10)
			return err
		})
		if err != nil {
			log.Warn().Err(err).Int("steps", len(batch)).Msg("steps of another host's clients not delivered there")
		}
	}
}

// takeSteps is the exchange of a batch of steps sent by the store's host: each is recorded on its client's
// task when the client is a task's of this host on the store, and left out otherwise.
func (a *arrivals) takeSteps(ctx context.Context, peer, store string, head json.RawMessage, body *cluster.Body) ([]byte, error) {
	var none struct{}
	if err := decodeHead(head, &none); err != nil {
		return nil, err
	}
	if body.Size > stepsBodyMax {
		return nil, fmt.Errorf("a batch of steps of %d bytes: at most %d", body.Size, stepsBodyMax)
	}
	if err := a.fromOwner(ctx, peer, store); err != nil {
		return nil, err
	}
	sp, err := a.spec(ctx, store)
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(body)
	if err != nil {
		return nil, err
	}
	var steps []stepWire
	if err := decodeHead(b, &steps); err != nil {
		return nil, err
	}
	kept, tasks := 0, map[string]bool{}
	for _, s := range steps {
		task := clientid.OwnerDir(s.Client)
		if !clientid.Valid(s.Client) || !api.ValidTaskID(task) || !slices.Contains(stepKinds, s.Kind) {
			continue
		}
		here, seen := tasks[task]
		if !seen {
			here = a.taskHere(ctx, task, store)
			tasks[task] = here
		}
		if !here {
			continue
		}
		if s.Kind == stepCut {
			if a.keep.Cut != nil {
				a.keep.Cut(sp, task, s.Client, cut(s.Fault, faultMessageMax))
			}
		} else {
			a.keep.TabStep(sp, mux.TimelineEvent{Client: s.Client, Tab: s.Tab, Kind: s.Kind, URL: s.URL, Title: s.Title, By: s.By, Why: s.Why})
		}
		kept++
	}
	if kept < len(steps) {
		a.log.Debug().Str("store", store).Str("from", peer).Int("steps", len(steps)).Int("kept", kept).
			Msg("steps of clients that are no task's of this host's on the store left out")
	}
	return json.Marshal(map[string]int{"kept": kept})
}

// faultKinds are the events of a store's browser that hit the tasks using it (timeline.Desk.EventStep).
var faultKinds = []string{api.EventBrowserDied, api.EventBrowserRelaunched, api.EventLoginRestored}

// faultHead is a fault on the door.
type faultHead struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// TellFault tells every other live host an event of a store's browser that hits the tasks using it, for
// their own tasks' timelines.
func (ch *Host) TellFault(kind, key string, ev api.Event) {
	if !slices.Contains(faultKinds, kind) || key == api.WebKey {
		return
	}
	head := faultHead{Kind: kind, Message: cut(ev.Message, faultMessageMax)}
	for _, h := range ch.hosts.View() {
		if h.Host == ch.host || !h.Alive {
			continue
		}
		ch.spawn(func(ctx context.Context) {
			err := tryBackoff(ctx, stepsTries, stepsFirstWait, func() bool { return ch.hosts.Alive(h.Host) }, func() error {
				_, err := ch.exchange(ctx, h.Host, key, kindFault, head, nil, 0, 1<<10)
				return err
			})
			if err != nil {
				ch.log.Warn().Err(err).Str("store", key).Str("to", h.Host).Str("event", kind).Msg("a fault of a store's browser not told to a host")
			}
		})
	}
}

// takeFault is the exchange of a fault of a store's browser, told by the store's host.
func (a *arrivals) takeFault(ctx context.Context, peer, store string, head json.RawMessage, _ *cluster.Body) ([]byte, error) {
	var h faultHead
	if err := decodeHead(head, &h); err != nil {
		return nil, err
	}
	if !slices.Contains(faultKinds, h.Kind) {
		return nil, fmt.Errorf("a fault of kind %q: a store's host tells %q", h.Kind, faultKinds)
	}
	if err := a.fromOwner(ctx, peer, store); err != nil {
		return nil, err
	}
	if _, err := a.spec(ctx, store); err != nil {
		return nil, err
	}
	a.keep.Fault(h.Kind, store, api.Event{At: time.Now(), Kind: h.Kind, StoreID: store, Message: cut(h.Message, faultMessageMax),
		From: api.FromManager})
	return []byte("{}"), nil
}
