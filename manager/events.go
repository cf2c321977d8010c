package manager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/handoffs"
	"vibebrowser/manager/metrics"
	"vibebrowser/manager/notify"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// Events: the manager notes its own (a browser died, a budget spent, a handoff asked) and takes the shims'
// reports (POST PathEvents), which are an agent's words. The people watching see both, each marked with
// whose words it holds, and an agent's flood of reports never pushes the manager's own out of sight.

// How many events the manager keeps in memory for GET /v1/events and the people watching: its own and
// every handoff's in one ring, the shims' reports in another, so that a flood of reports turns over only
// the reports.
const (
	recentEvents  = 300
	recentReports = 100
)

// eventLog keeps the recent events, and counts each task's reports against VIBE_TASK_EVENTS_PER_MIN.
type eventLog struct {
	mu      sync.Mutex // mu guards the fields below
	own     eventRing  // the manager's own events and the handoffs'
	reports eventRing  // the shims' reports
	rates   map[string]rateWindow
}

// eventRing keeps the newest events of one kind of source, oldest first.
type eventRing struct {
	ring   []api.Event
	next   int // where the next event goes
	filled bool
}

func (r *eventRing) add(ev api.Event, size int) {
	if r.ring == nil {
		r.ring = make([]api.Event, size)
	}
	r.ring[r.next] = ev
	r.next = (r.next + 1) % size
	r.filled = r.filled || r.next == 0
}

func (r *eventRing) list() []api.Event {
	if !r.filled {
		return r.ring[:r.next]
	}
	return append(r.ring[r.next:len(r.ring):len(r.ring)], r.ring[:r.next]...)
}

func (l *eventLog) add(ev api.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if api.ShimEventKind(ev.Kind) {
		l.reports.add(ev, recentReports)
	} else {
		l.own.add(ev, recentEvents)
	}
}

// list returns the recent events of both rings, oldest first.
func (l *eventLog) list() []api.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	a, b := l.own.list(), l.reports.list()
	out := make([]api.Event, 0, len(a)+len(b))
	for len(a) > 0 || len(b) > 0 {
		if len(b) == 0 || len(a) > 0 && !b[0].At.Before(a[0].At) {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return out
}

// rateWindow counts one task's reports in the minute that began at start.
type rateWindow struct {
	start time.Time
	n     int
}

// rateWindows is how many tasks' windows are kept before the ended ones are dropped.
const rateWindows = 256

// allow counts one report or handoff of task against perMin a minute, and reports whether it fits.
func (l *eventLog) allow(task string, perMin int, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.rates == nil {
		l.rates = map[string]rateWindow{}
	}
	w := l.rates[task]
	if now.Sub(w.start) >= time.Minute {
		if len(l.rates) >= rateWindows {
			for k, o := range l.rates {
				if now.Sub(o.start) >= time.Minute {
					delete(l.rates, k)
				}
			}
		}
		w = rateWindow{start: now}
	}
	if w.n >= perMin {
		return false
	}
	w.n++
	l.rates[task] = w
	return true
}

// countTask counts one report or handoff of a task (or, without one, of its browser key) against
// VIBE_TASK_EVENTS_PER_MIN: over it, the refusal names the quota and the knob.
func (m *Manager) countTask(task, key, what string) error {
	who := task
	if who == "" {
		who = "browser " + key
	}
	if m.events.allow(who, m.cfg.TaskEventsPerMin, time.Now()) {
		return nil
	}
	m.metrics.QuotaHit(metrics.QuotaEvents)
	return fmt.Errorf("%w: task %s has sent %d events and handoffs this minute, its quota (VIBE_TASK_EVENTS_PER_MIN=%d): "+
		"this %s is refused; wait a minute", errdefs.ErrQuota, orNone(task), m.cfg.TaskEventsPerMin, m.cfg.TaskEventsPerMin, what)
}

// orNone is s, or "(none)" when it is empty.
func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// note is the one place an event is recorded: logged at level, counted in vibe_events_total, kept for
// the people watching and, for the kinds that need a person, sent to VIBE_NOTIFY_URL. key is the browser's
// key (a store id or api.WebKey). An event whose From is unset holds the manager's own words.
func (m *Manager) note(level zerolog.Level, kind, key string, ev api.Event) {
	ev.At, ev.Kind = time.Now(), kind
	if key != api.WebKey {
		ev.StoreID = key
	}
	if ev.From == "" {
		ev.From = api.FromManager
	}
	m.events.add(ev)
	m.metrics.Events.WithLabelValues(kind).Inc()
	line := m.log.WithLevel(level).Str("event", kind).Str("browser", key).Str("from", ev.From)
	if ev.BUName != "" {
		line = line.Str("bu_name", ev.BUName)
	}
	if ev.TaskID != "" {
		line = line.Str("task", ev.TaskID)
	}
	if ev.Handoff != "" {
		line = line.Str("handoff", ev.Handoff)
	}
	line.Msg(ev.Message)
	m.notify.Enqueue(ev)
	m.timeline.EventStep(kind, key, ev)
	if m.cluster != nil { // the store's tasks on other hosts (SPEC §19)
		m.cluster.TellFault(kind, key, ev)
	}
}

// RecordEvent notes an event a shim reports, checked by the API (a kind a shim reports, its message
// bounded), marked as the agent's, within the task's VIBE_TASK_EVENTS_PER_MIN.
func (m *Manager) RecordEvent(ev api.Event) error {
	key := ev.StoreID
	if key == "" {
		key = api.WebKey
	}
	if err := m.countTask(ev.TaskID, key, "event"); err != nil {
		return err
	}
	ev.From, ev.Handoff = api.FromAgent, "" // a report is the agent's words, and speaks for no handoff
	m.note(zerolog.WarnLevel, ev.Kind, key, ev)
	return nil
}

// describeEvent is an event as a notification: its store named by slug, an agent's words said to be the
// agent's, and where to act in the web UI (the handoff on the overview, else the store's page).
func (m *Manager) describeEvent(ctx context.Context, ev api.Event) notify.Notification {
	var stores []state.Store
	if ev.StoreID != "" {
		if s, err := m.db.GetStore(ctx, ev.StoreID); err == nil {
			stores = append(stores, s)
		}
	}
	n := notify.Notification{Kind: ev.Kind, Store: handoffs.SlugsOf(stores).Of(ev.StoreID), Task: ev.TaskID, Session: ev.BUName,
		Reason: ev.Message, From: ev.From, Handoff: ev.Handoff, At: ev.At}
	if ev.From == api.FromAgent {
		n.Reason = notify.AgentSays + ev.Message
	}
	if ev.Handoff != "" {
		n.URL = m.uiLink("/#handoff-" + ev.Handoff)
	} else {
		n.URL = m.uiLink("/store/" + n.Store)
	}
	return n
}

// Events are the recent events, oldest first (GET PathEvents, the web UI).
func (m *Manager) Events() []api.Event { return m.events.list() }
