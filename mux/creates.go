package mux

import "vibebrowser/mux/cdpwire"

// Creates: a client's Target.createTarget (and a human tab's, NewHumanTab) goes one at a time, so that the
// targets Chrome announces while one is pending (puppeteer's tab target has its own id) are attributed to
// it without doubt; the others wait in a queue.

// creates is the queue of Target.createTarget calls: the one in flight and those waiting. Its state is
// guarded by Mux.mu; the core's attribution (attributeLocked) claims for the one in flight what appears
// meanwhile.
type creates struct {
	m        *Mux
	inFlight *createRec     // the one Target.createTarget in flight; others wait in queue
	queue    []queuedCreate // the creates waiting their turn
}

// createRec is the create in flight.
type createRec struct {
	c       *conn     // nil for a human tab's create (NewHumanTab)
	cl      *client   // the owner-to-be: c's client, or the human client
	park    *parked   // nil for a human tab's create
	claimed []*target // tabs and pages attributed to this create while it was pending, in Chrome's order;
	// their events are held back (the early-event buffer, bounded by maxClaims) until the answer says
	// which of them the create made, then replayed in Chrome's order before the answer.
}

// queuedCreate is a create waiting its turn.
type queuedCreate struct {
	c     *conn
	msg   []byte
	info  cdpwire.Info
	human *humanCreate // set instead of c for NewHumanTab
}

func (cr *creates) startCreateLocked(c *conn, b []byte, info cdpwire.Info, id []byte) {
	m := cr.m
	rec := &createRec{c: c, cl: c.cl, park: &parked{c: c}}
	cr.inFlight = rec
	if m.forwardLocked(c, b, info, id, kindCreate, rec.park) == nil {
		cr.inFlight = nil
		cr.nextCreateLocked()
	}
}

// nextCreateLocked starts the next queued createTarget. They go one at a time so that the targets Chrome
// announces while one is pending (puppeteer's tab target has its own id) are attributed without doubt.
func (cr *creates) nextCreateLocked() {
	m := cr.m
	for cr.inFlight == nil && len(cr.queue) > 0 {
		q := cr.queue[0]
		cr.queue[0] = queuedCreate{}
		cr.queue = cr.queue[1:]
		if q.human != nil {
			if m.up == nil {
				q.human.finish("", ErrDisconnected)
				continue
			}
			m.op.startHumanCreateLocked(q.human)
			continue
		}
		if q.c.closed() || q.c.cl.conn != q.c {
			continue
		}
		id := append([]byte(nil), q.msg[q.info.IDStart:q.info.IDEnd]...)
		if m.up == nil {
			m.replyErrLocked(q.c, id, q.info.SessionID, codeInternal, "Browser disconnected")
			continue
		}
		cr.startCreateLocked(q.c, q.msg, q.info, id)
	}
}

func (cr *creates) dropQueuedCreatesLocked(c *conn) {
	kept := cr.queue[:0]
	for _, q := range cr.queue {
		if q.c != c {
			kept = append(kept, q)
		}
	}
	clear(cr.queue[len(kept):])
	cr.queue = kept
}

// settleClaimsLocked keeps, of what appeared while a create was pending, only the created page and the tab
// nearest to it in Chrome's announcements (a create makes one of each). Anything else (the startup tab
// of a just-launched browser, a human's new window) goes back to nobody.
func (cr *creates) settleClaimsLocked(rec *createRec, page *target) {
	m := cr.m
	pos := -1
	for i, t := range rec.claimed {
		if t == page {
			pos = i
		}
	}
	var tab *target
	bestD := 0
	for i, t := range rec.claimed {
		if t.typ != "tab" {
			continue
		}
		d := i
		if pos >= 0 {
			d = dist(i, pos)
		}
		if tab == nil || d < bestD || (d == bestD && i < pos) { // on a tie, the tab announced before its page
			tab, bestD = t, d
		}
	}
	for _, t := range rec.claimed {
		if !t.held {
			continue
		}
		t.held = false
		if t != page && t != tab {
			m.log.Debug().Str("target", t.id).Str("type", t.typ).Msg("appeared during a create but not made by it: left to nobody")
			t.owner = nil
			continue
		}
		if !t.closing {
			m.ownLocked(t, rec.cl, rec.park)
		}
	}
	if tab != nil && pos >= 0 {
		tab.page = page
	}
}

// abandonCreateLocked lets go of what a create that got no answer had claimed.
func (cr *creates) abandonCreateLocked(rec *createRec) {
	for _, t := range rec.claimed {
		if t.held {
			t.held, t.owner = false, nil
		}
	}
}

// maxClaims bounds what one pending create may hold back (a create makes a tab and a page).
const maxClaims = 16

func dist(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}
