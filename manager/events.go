package manager

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/notify"
	"vibebrowser/state"
)

// recentEvents is how many events the manager keeps in memory for GET /v1/events and the people watching.
const recentEvents = 300

// eventLog keeps the recent events, oldest first.
type eventLog struct {
	mu     sync.Mutex // mu guards the fields below
	ring   [recentEvents]api.Event
	next   int // where the next event goes
	filled bool
}

func (l *eventLog) add(ev api.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ring[l.next] = ev
	l.next = (l.next + 1) % recentEvents
	l.filled = l.filled || l.next == 0
}

// list returns the recent events, oldest first.
func (l *eventLog) list() []api.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.filled {
		return append([]api.Event{}, l.ring[:l.next]...)
	}
	return append(append([]api.Event{}, l.ring[l.next:]...), l.ring[:l.next]...)
}

// note is the one place an event is recorded: logged at level, counted in vibe_events_total, kept for
// the people watching and, for the kinds that need a person, sent to VIBE_NOTIFY_URL. key is the browser's
// key (a store id or api.WebKey).
func (m *Manager) note(level zerolog.Level, kind, key string, ev api.Event) {
	ev.At, ev.Kind = time.Now(), kind
	if key != api.WebKey {
		ev.StoreID = key
	}
	m.events.add(ev)
	m.metrics.events.WithLabelValues(kind).Inc()
	line := m.log.WithLevel(level).Str("event", kind).Str("browser", key)
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
	m.eventStep(kind, key, ev)
}

// describeEvent is an event as a notification: its store named by slug, and where to act in the web UI
// (the handoff on the overview, else the store's page).
func (m *Manager) describeEvent(ctx context.Context, ev api.Event) notify.Notification {
	var stores []state.Store
	if ev.StoreID != "" {
		if s, err := m.db.GetStore(ctx, ev.StoreID); err == nil {
			stores = append(stores, s)
		}
	}
	n := notify.Notification{Kind: ev.Kind, Store: slugsOf(stores).of(ev.StoreID), Task: ev.TaskID, Session: ev.BUName,
		Reason: ev.Message, Handoff: ev.Handoff, At: ev.At}
	if ev.Handoff != "" {
		n.URL = m.uiLink("/#handoff-" + ev.Handoff)
	} else {
		n.URL = m.uiLink("/store/" + n.Store)
	}
	return n
}
