package mux

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"time"
)

// Ownership: who owns each target and session, the one home of that question. A target is owned by the
// client that created it (claims settled when its createTarget is answered), by the owner of its opener,
// parent frame or browser context; ownership is rebuilt after every reconnect, bounded by the tab cap, kept
// through a disconnected client's grace period and persisted through Hooks.OwnershipChanged.

// target is a browser target as the mux knows it.
type target struct {
	id, typ, url, opener, context, parentFrame string
	info                                       []byte // Chrome's raw targetInfo, replayed as is
	title                                      string // the newest title read from Chrome: its announcements, or Clients' reads (refreshTitlesLocked)
	owner                                      *client
	used                                       uint64
	usedAt                                     time.Time // wall time of used, for the operator's list
	closing                                    bool
	seen                                       bool
	held                                       bool  // claimed by the pending create: its events wait for the answer
	opSeen                                     bool  // an operator session attached to it once (muxAttachLocked)
	autoConn                                   *conn // the connection that got its virtual auto-attach
	awaitAuto                                  bool  // a new page whose paused auto-attach from Chrome is due (autoattach.go)
	lettingGo                                  int   // the mux's own sessions on it being let go (autoattach.go)
	hold                                       *hold // a person's takeover (takeover.go)
	// page is a tab target's page, where the mux saw which it is (a create's pair, or the page announced in a
	// session on the tab): closing the tab closes the page, so a held page's tab is held too.
	page *target
	// closeOnRelease: the owner closed everything it owns (Browser.close) while a person held this page;
	// the hold's end closes it then.
	closeOnRelease bool
	// events counts the messages from Chrome about it: its announcements of a new URL or title and its owner's
	// sessions' events. With used, it tells when its pixels can have changed (TabInfo.Moves).
	events uint64
	// line is what the task timeline was told of it (timeline.go).
	line tabLine
}

// session is a flat CDP session, owned by whoever attached (or by the owner of its parent session).
type session struct {
	id             string
	owner          *client
	target         *target
	root           *target // the top-level target a command on this session uses (LRU), children included
	discover       bool
	discoverFilter []targetFilter
}

func (m *Mux) addTargetLocked(t *target) {
	m.targets[t.id] = t
	m.order = append(m.order, t)
}

func (m *Mux) removeTargetLocked(t *target) {
	t.closeOnRelease = false // it is gone already
	for _, f := range m.features {
		f.targetGoneLocked(t)
	}
	delete(m.targets, t.id)
	for i, o := range m.order {
		if o == t {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	if t.owner != nil {
		m.ownershipChangedLocked()
	}
}

func (m *Mux) touchTargetLocked(t *target) {
	m.tick++
	t.used = m.tick
	// m.activity was just set by the message that used t: copying it costs no clock read on the hot path.
	t.usedAt = m.activity
}

// attributeLocked finds the owner of a target that appeared: its opener's owner, its parent frame's
// owner, the owner of its browser context, or the client whose createTarget is in flight (claimed is then
// set: the target is held for that create). Only a target that just appeared can be the pending create's:
// an existing unowned target (a human's tab, the startup page) changing while a create is in flight is not.
func (m *Mux) attributeLocked(t *target, appeared bool) (owner *client, park *parked, claimed bool) {
	if o := m.targets[t.opener]; t.opener != "" && o != nil && o.owner != nil {
		return o.owner, nil, false
	}
	if o := m.targets[t.parentFrame]; t.parentFrame != "" && o != nil && o.owner != nil {
		return o.owner, nil, false
	}
	if t.context != "" {
		for _, cl := range m.clients {
			if cl.contexts[t.context] {
				return cl, nil, false
			}
		}
	}
	if appeared && m.cr.inFlight != nil && t.opener == "" && (t.typ == "page" || t.typ == "tab") && len(m.cr.inFlight.claimed) < maxClaims {
		m.cr.inFlight.claimed = append(m.cr.inFlight.claimed, t)
		return m.cr.inFlight.cl, m.cr.inFlight.park, true
	}
	return nil, nil, false
}

func (m *Mux) isDefaultContextLocked(ctxID string) bool {
	// A context no client created is the default one (or a human's); targets in it are still checked by
	// target ownership.
	for _, cl := range m.clients {
		if cl.contexts[ctxID] {
			return false
		}
	}
	return true
}

// ownLocked gives t to cl and does what a new target of a client implies: discovery event, virtual
// auto-attach, tab cap.
func (m *Mux) ownLocked(t *target, cl *client, park *parked) {
	ev := m.log.Debug().Str("client", cl.id).Str("target", t.id).Str("type", t.typ).Str("opener", t.opener)
	if t.info != nil { // zerolog writes a nil RawJSON as nothing at all: "info":, is not JSON
		ev = ev.RawJSON("info", t.info)
	}
	ev.Msg("target owned")
	t.owner = cl
	m.touchTargetLocked(t)
	m.ownershipChangedLocked()
	m.taps.tabStepLocked(t) // before a stray one closes: the timeline shows what the client opened
	if m.closeStrayLocked(t) {
		return
	}
	if t.info != nil {
		m.at.deliverTargetEventLocked(t, eventFrame("Target.targetCreated", targetInfoParams(t.info)).head)
	}
	m.at.maybeAutoAttachLocked(t, park)
	if t.typ == "page" {
		m.enforceTabCapLocked(cl, t)
	}
}

// rebuildLocked re-derives ownership from a fresh getTargets after every (re)connect: owned targets that
// still exist keep their owner; those gone are dropped, and after a relaunch a restored page with the
// same URL as a lost one goes back to that page's owner. On a fresh launch, orphan http(s) pages (left
// by a crash, restored by the profile) are closed once.
func (m *Mux) rebuildLocked(res []byte, failed bool) {
	if failed {
		return
	}
	var r struct {
		TargetInfos []json.RawMessage `json:"targetInfos"`
	}
	if json.Unmarshal(res, &r) != nil {
		return
	}
	present := map[string]bool{}
	for _, raw := range r.TargetInfos {
		var ti targetInfo
		if json.Unmarshal(raw, &ti) != nil {
			continue
		}
		present[ti.TargetID] = true
		if m.targets[ti.TargetID] == nil {
			t := &target{id: ti.TargetID, info: raw, typ: ti.Type, url: ti.URL, title: ti.Title, opener: ti.OpenerID, context: ti.BrowserContextID, parentFrame: ti.ParentFrameID, seen: true}
			m.addTargetLocked(t)
		}
	}
	var lost []*target
	for _, t := range append([]*target(nil), m.order...) {
		if present[t.id] {
			if t.closing { // its close went with the old connection, or was never sent (closed while down)
				m.sendCloseLocked(t)
			}
			continue
		}
		if t.owner != nil && t.typ == "page" && t.url != "" && !t.closing {
			lost = append(lost, t)
		}
		m.removeTargetLocked(t)
	}
	for _, l := range lost {
		if m.clients[l.owner.id] != l.owner {
			continue
		}
		for _, t := range m.order {
			if t.owner == nil && t.typ == "page" && t.url == l.url && !t.closing {
				m.ownLocked(t, l.owner, nil)
				break
			}
		}
	}
	if m.fresh {
		m.fresh = false
		for _, t := range append([]*target(nil), m.order...) {
			if t.owner == nil && t.typ == "page" && (strings.HasPrefix(t.url, "http://") || strings.HasPrefix(t.url, "https://")) {
				m.log.Info().Str("target", t.id).Msg("fresh launch: closing an orphan tab")
				m.closeTargetLocked(t)
			}
		}
	}
	if m.cfg.Grace == Off {
		// Adopted clients that have not come back: with no grace period their tabs close, now that the
		// browser is there to close them (Serve left them alone).
		for _, cl := range m.clients {
			if cl.conn == nil {
				m.expireClientLocked(cl)
			}
		}
	}
	m.ownershipChangedLocked()
}

// closeTargetLocked closes t in the browser, or only disowns it when it is the browser's last page and
// KeepLastPage is set (closing it would end a Ziniao environment).
func (m *Mux) closeTargetLocked(t *target) {
	if t.closing {
		return
	}
	if m.cfg.KeepLastPage && t.typ == "page" {
		pages := 0
		for _, o := range m.targets {
			if o.typ == "page" && !o.closing {
				pages++
			}
		}
		if pages <= 1 {
			t.owner = nil
			t.autoConn = nil
			m.taps.tabGoneLocked(t)
			m.ownershipChangedLocked()
			return
		}
	}
	t.closing = true
	m.ownershipChangedLocked()
	m.sendCloseLocked(t)
}

// sendCloseLocked asks the browser to close t, which is closing. With no browser connection the request
// is lost: rebuildLocked asks again after the reconnect.
func (m *Mux) sendCloseLocked(t *target) {
	params := append(append([]byte(`{"targetId":`), appendJSONString(nil, t.id)...), '}')
	m.sendInternalLocked("Target.closeTarget", params, "", nil)
}

// closeClientTargetsLocked closes every page the client owns; their tab targets go with them (closing a
// tab target directly would also take a page KeepLastPage must keep). A page a person holds stays open until
// they let go: the hold's end closes it (endHoldLocked).
func (m *Mux) closeClientTargetsLocked(cl *client) {
	for _, t := range m.order {
		if t.owner == cl && t.typ == "page" && !t.closing {
			if t.hold != nil {
				t.closeOnRelease = true
				continue
			}
			m.closeTargetLocked(t)
		}
	}
}

// enforceTabCapLocked closes the client's least recently used pages beyond the cap, never newest.
// Human tabs have no cap: a person closes them, or the grace period after the last viewer does.
func (m *Mux) enforceTabCapLocked(cl *client, newest *target) {
	if m.cfg.TabCap == Off || cl.id == HumanClient {
		return
	}
	for {
		var pages []*target
		for _, t := range m.order {
			if t.owner == cl && t.typ == "page" && !t.closing {
				pages = append(pages, t)
			}
		}
		if len(pages) <= m.cfg.TabCap {
			return
		}
		var lru *target
		for _, t := range pages {
			if t != newest && t.hold == nil && (lru == nil || t.used < lru.used) { // a person's tab stays
				lru = t
			}
		}
		if lru == nil {
			return
		}
		m.log.Info().Str("client", cl.id).Str("target", lru.id).Int("cap", m.cfg.TabCap).Msg("tab cap reached: closing the least recently used tab")
		m.closeTargetLocked(lru)
		if lru.owner == nil { // kept as the last page; nothing else to close
			continue
		}
	}
}

// dropSessionsLocked detaches every session of a client whose connection is gone or replaced: the new
// connection re-attaches, as a fresh CDP connection would.
func (m *Mux) dropSessionsLocked(cl *client) {
	for sid, s := range m.sessions {
		if s.owner != cl {
			continue
		}
		delete(m.sessions, sid)
		if s.target != nil && s.target.autoConn != nil && s.target.autoConn.cl == cl {
			s.target.autoConn = nil
		}
		m.sendInternalLocked("Target.detachFromTarget", sessionParams(sid), "", nil)
	}
	for _, t := range m.targets {
		if t.autoConn != nil && t.autoConn.cl == cl {
			t.autoConn = nil
		}
	}
}

// startGraceLocked starts the grace period of a client that just lost its connection; with Grace Off its
// tabs close at once.
func (m *Mux) startGraceLocked(cl *client) {
	if cl.grace != nil {
		cl.grace.Stop()
	}
	cl.graceGen++
	if m.cfg.Grace == Off {
		m.expireClientLocked(cl)
		return
	}
	gen := cl.graceGen
	cl.grace = time.AfterFunc(m.cfg.Grace, func() { m.expireClient(cl, gen) })
}

// expireClient ends a disconnected client's grace period, unless the client came back or the mux closed
// meanwhile.
func (m *Mux) expireClient(cl *client, gen int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || cl.conn != nil || cl.viewers > 0 || cl.graceGen != gen || m.clients[cl.id] != cl {
		return
	}
	m.expireClientLocked(cl)
}

// expireClientLocked closes a disconnected client's tabs and forgets its id.
func (m *Mux) expireClientLocked(cl *client) {
	m.log.Info().Str("client", cl.id).Msg("client grace period over: closing its tabs")
	m.closeClientTargetsLocked(cl)
	for _, t := range m.targets {
		if t.owner == cl {
			t.owner = nil
		}
	}
	cl.grace = nil
	delete(m.clients, cl.id)
	for _, f := range m.features {
		f.clientGoneLocked(cl)
	}
	m.ownershipChangedLocked()
}

// ownershipChangedLocked schedules a call of Hooks.OwnershipChanged.
func (m *Mux) ownershipChangedLocked() { notify(m.ownCh) }

// notify wakes the goroutine that waits on ch, a channel of capacity 1 that its goroutine drains: one
// pending wake-up is enough, what it is woken for is read under mu when it runs.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Ownership returns a snapshot of client id -> owned target ids.
func (m *Mux) Ownership() map[string][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ownershipLocked()
}

func (m *Mux) ownershipLocked() map[string][]string {
	out := map[string][]string{}
	for _, t := range m.order {
		if t.owner != nil && !t.closing {
			out[t.owner.id] = append(out[t.owner.id], t.id)
		}
	}
	return out
}

// ownershipSettle is how long a removal waits before it is persisted. An addition is passed at once, so a
// tab an agent has just opened goes back to it after a kill -9 of the manager; a removal waits, so a call
// that closes its tab as it ends has no write in its way (on 2 cores that write delayed the end of the
// call), and removals close together are one write. A removal not yet written is harmless: a saved
// target that is gone is dropped when ownership is rebuilt.
var ownershipSettle = 100 * time.Millisecond // a variable for the tests only

// runOwnershipHook calls Hooks.OwnershipChanged with each snapshot that differs from the last one it
// passed: at once when a client gained a target, ownershipSettle after a change that only took targets
// away. A change still waiting when ctx ends is passed on the way out.
func (m *Mux) runOwnershipHook(ctx context.Context) {
	hook := m.cfg.Hooks.OwnershipChanged
	if hook == nil {
		return
	}
	var last map[string][]string
	waiting := false
	settle := time.NewTimer(time.Hour)
	settle.Stop()
	pass := func(now bool) {
		o := m.Ownership()
		switch {
		case last != nil && maps.EqualFunc(o, last, slices.Equal):
			return
		case !now && !gained(o, last):
			if !waiting {
				waiting = true
				settle.Reset(ownershipSettle)
			}
			return
		}
		settle.Stop()
		waiting, last = false, o
		hook(o)
	}
	for {
		select {
		case <-ctx.Done():
			select {
			case <-m.ownCh:
				waiting = true
			default:
			}
			if waiting {
				pass(true)
			}
			return
		case <-m.ownCh:
			pass(false)
		case <-settle.C:
			waiting = false // a wait ending in a snapshot equal to the last passes nothing, and the next removal waits anew
			pass(true)
		}
	}
}

// gained reports whether a client owns a target in o that it did not own in last.
func gained(o, last map[string][]string) bool {
	for id, targets := range o {
		for _, t := range targets {
			if !slices.Contains(last[id], t) {
				return true
			}
		}
	}
	return false
}
