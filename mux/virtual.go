package mux

// Virtual discovery and auto-attach: Chrome scopes setDiscoverTargets and setAutoAttach to a connection,
// and every client shares the mux's one, so the mux keeps them per client (and per session) and plays
// Chrome's part itself.

// targetFilter is one entry of CDP's Target.TargetFilter.
type targetFilter struct {
	Type    string `json:"type"`
	Exclude bool   `json:"exclude"`
}

// defaultFilter is what Chrome assumes when a filter is omitted: everything but browser and tab.
var defaultFilter = []targetFilter{{Type: "browser", Exclude: true}, {Type: "tab", Exclude: true}, {}}

func filterMatch(f []targetFilter, typ string) bool {
	if f == nil {
		f = defaultFilter
	}
	for _, e := range f {
		if e.Type == "" || e.Type == typ {
			return !e.Exclude
		}
	}
	return false
}

// setDiscoverLocked virtualises discovery per client (browser level) or per session (chromedp sends it on
// its page session): Chrome's is browser-wide and would announce every tenant's targets.
func (a *attachments) setDiscoverLocked(c *conn, sess *session, id []byte, p *cmdParams) {
	m := a.m
	sid := ""
	if sess != nil {
		sid = sess.id
		sess.discover, sess.discoverFilter = p.Discover, p.Filter
	} else {
		c.discover, c.discoverFilter = p.Discover, p.Filter
	}
	if p.Discover {
		for _, t := range m.order {
			if t.owner == c.cl && !t.closing && t.info != nil && filterMatch(p.Filter, t.typ) {
				m.sendLocked(c, withSession(eventFrame("Target.targetCreated", targetInfoParams(a.ownerInfoLocked(t, t.info))), sid))
			}
		}
	}
	m.sendLocked(c, resultFrame(id, sid, []byte("{}")))
}

// deliverTargetEventLocked sends a discovery event about t (Chrome's bytes b) to wherever its owner
// asked for discovery: the connection and any of its sessions.
func (a *attachments) deliverTargetEventLocked(t *target, b []byte) {
	m := a.m
	if t.owner == nil || t.owner.conn == nil {
		return
	}
	c := t.owner.conn
	b = a.ownerInfoLocked(t, b)
	if c.discover && filterMatch(c.discoverFilter, t.typ) {
		m.sendLocked(c, wholeFrame(b))
	}
	for _, s := range m.sessions {
		if s.owner == t.owner && s.discover && filterMatch(s.discoverFilter, t.typ) {
			m.sendLocked(c, withSession(wholeFrame(b), s.id))
		}
	}
}

// setAutoAttachLocked virtualises browser-level auto-attach per client. Chrome's is per connection and
// shared by every client here: forwarding one client's setAutoAttach(false) would detach everyone's
// sessions, and its waitForDebuggerOnStart would pause other clients' and humans' tabs. The mux attaches
// the client to its own targets itself, before answering, as Chrome would; a new page comes paused from
// the mux's own auto-attach (autoattach.go).
func (a *attachments) setAutoAttachLocked(c *conn, id []byte, p *cmdParams) {
	m := a.m
	c.autoAttach = p.AutoAttach
	c.autoFilter = p.Filter
	c.autoWait = p.WaitForDebuggerOnStart
	park := &parked{c: c, f: resultFrame(id, "", []byte("{}")), ready: true}
	if p.AutoAttach {
		for _, t := range m.order {
			if t.owner == c.cl && !t.closing && t.autoConn != c && filterMatch(p.Filter, t.typ) {
				a.autoAttachLocked(t, c, park)
			}
		}
	}
	m.releaseLocked(park)
}

// autoAttachLocked attaches c to its target t, holding park until Chrome announced the session.
func (a *attachments) autoAttachLocked(t *target, c *conn, park *parked) {
	m := a.m
	t.autoConn = c
	if park != nil {
		park.waits++
	}
	params := append(append([]byte(`{"targetId":`), appendJSONString(nil, t.id)...), `,"flatten":true}`...)
	m.sendInternalLocked("Target.attachToTarget", params, "", func(res []byte, failed bool) {
		if failed && t.autoConn == c {
			t.autoConn = nil
		}
		if park != nil {
			park.waits--
			m.releaseLocked(park)
		}
	})
}

// maybeAutoAttachLocked does the virtual auto-attach of t for its owner, when the owner asked for it.
func (a *attachments) maybeAutoAttachLocked(t *target, park *parked) {
	if c := a.autoAttachConnLocked(t); c != nil {
		a.autoAttachLocked(t, c, park)
	}
}

// autoAttachConnLocked returns the connection that should get t's auto-attach now, the mux's virtual one or
// Chrome's paused one (chromeAttachedLocked): its owner's, when the owner asked for auto-attach of t's type
// and has none of t yet. Nil for a target held for a create (attached when the create is answered), one
// closing, a page whose paused auto-attach from Chrome is still due (it gets that one), and children:
// frames and dedicated workers attach inside their parent's session, as on Chrome.
func (a *attachments) autoAttachConnLocked(t *target) *conn {
	if t.owner == nil || t.held || t.closing || t.awaitAuto {
		return nil
	}
	switch t.typ {
	case "iframe", "worker", "browser":
		return nil
	}
	c := t.owner.conn
	if c == nil || !c.autoAttach || t.autoConn == c || !filterMatch(c.autoFilter, t.typ) {
		return nil
	}
	return c
}
