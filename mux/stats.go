package mux

import (
	"sort"
	"time"
)

// Stats is a snapshot of the mux's state and counters.
type Stats struct {
	// Clients is the number of connected clients.
	Clients int
	// Upstream reports whether the browser connection is up.
	Upstream bool
	// LastActivity is the time of the last client message or upstream Target.* event (navigation
	// included); IdleSeconds is the time since, in seconds.
	LastActivity time.Time
	IdleSeconds  float64
	// MessagesIn and BytesIn count client messages received; MessagesOut and BytesOut count messages
	// queued to clients.
	MessagesIn, MessagesOut uint64
	BytesIn, BytesOut       uint64
	// Pending is the number of requests in flight upstream.
	Pending int
	// Viewers is the number of live operator views (View): a browser someone is watching is not idle.
	Viewers int
	// Held is the number of tabs a person holds (View.Hold).
	Held int
	// PerClient lists every known client id (connected or within its grace period), sorted by id.
	PerClient []ClientStats
}

// ClientStats describes one client id.
type ClientStats struct {
	ID        string
	Connected bool
	// Tabs is the number of pages the client owns.
	Tabs int
	// QueueFrames and QueueBytes are the depth of its send queue.
	QueueFrames, QueueBytes int
	// LastActivity is the client's last message (or connection) time.
	LastActivity time.Time
}

// Stats returns a snapshot of the mux's state and counters.
func (m *Mux) Stats() Stats {
	m.mu.Lock()
	s := Stats{
		Upstream:     m.up != nil,
		LastActivity: m.activity,
		IdleSeconds:  time.Since(m.activity).Seconds(),
		Pending:      len(m.pending),
		Viewers:      m.op.views,
	}
	tabs := map[*client]int{}
	for _, t := range m.order {
		if t.owner != nil && t.typ == "page" && !t.closing {
			tabs[t.owner]++
		}
		if t.hold != nil {
			s.Held++
		}
	}
	for _, cl := range m.clients {
		cs := ClientStats{ID: cl.id, Connected: cl.conn != nil, Tabs: tabs[cl], LastActivity: cl.active}
		if cl.conn != nil {
			s.Clients++
			cs.QueueFrames, cs.QueueBytes = cl.conn.q.depth()
		}
		s.PerClient = append(s.PerClient, cs)
	}
	m.mu.Unlock()
	sort.Slice(s.PerClient, func(i, j int) bool { return s.PerClient[i].ID < s.PerClient[j].ID })
	s.MessagesIn, s.MessagesOut = m.msgsIn.Load(), m.msgsOut.Load()
	s.BytesIn, s.BytesOut = m.bytesIn.Load(), m.bytesOut.Load()
	return s
}
