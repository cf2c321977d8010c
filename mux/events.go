package mux

import (
	"encoding/json"
	"strings"

	"vibebrowser/mux/cdpwire"
)

// Events from the browser: every message the upstream reader reads is dispatched here, and each event
// goes to the client that owns its session or target, or to nobody.

// upEvent is the decoded params of the browser-level events the mux acts on.
type upEvent struct {
	Params struct {
		TargetInfo         json.RawMessage `json:"targetInfo"`
		TargetID           string          `json:"targetId"`
		SessionID          string          `json:"sessionId"`
		WaitingForDebugger bool            `json:"waitingForDebugger"`
	} `json:"params"`
}

type targetInfo struct {
	TargetID         string `json:"targetId"`
	Type             string `json:"type"`
	URL              string `json:"url"`
	Title            string `json:"title"`
	OpenerID         string `json:"openerId"`
	BrowserContextID string `json:"browserContextId"`
	ParentFrameID    string `json:"parentFrameId"`
}

// handleUpstream routes one browser message.
func (m *Mux) handleUpstream(up *upstream, b []byte) {
	info, err := cdpwire.Scan(b)
	if err != nil {
		m.log.Debug().Err(err).Msg("unreadable browser message dropped")
		return
	}
	m.mu.Lock()
	if m.up != up {
		m.mu.Unlock()
		return
	}
	m.batching = true
	switch {
	case info.HasID() && !info.HasMethod:
		m.responseLocked(b, info)
	case info.SessionID != "":
		m.sessionEventLocked(b, info)
	default:
		m.browserEventLocked(b, info)
	}
	m.batching = false
	m.mu.Unlock()
	for i, c := range m.kicked {
		c.writeInline()
		m.kicked[i] = nil
	}
	m.kicked = m.kicked[:0]
}

func (m *Mux) browserEventLocked(b []byte, info cdpwire.Info) {
	method := info.Method
	if !strings.HasPrefix(method, "Target.") && !strings.HasPrefix(method, "Browser.download") {
		return // nothing else browser-level belongs to a client
	}
	var ev upEvent
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	pr := &ev.Params
	if m.op.browserEventLocked(method, pr.SessionID, pr.TargetInfo) {
		return // the operator's own browser session: no client's business, no activity
	}
	var ti targetInfo
	if method == "Target.targetCreated" || method == "Target.targetInfoChanged" {
		if json.Unmarshal(pr.TargetInfo, &ti) != nil || ti.TargetID == "" {
			return
		}
		if t := m.targets[ti.TargetID]; t != nil && method == "Target.targetInfoChanged" && m.at.attachFlipHiddenLocked(t, pr.TargetInfo) {
			t.info = pr.TargetInfo // the mux's own session came or went: no event for the owner, no activity
			return
		}
	}
	if strings.HasPrefix(method, "Target.") {
		m.touchActivityLocked()
	}
	if ti.Type == "page" {
		m.taps.jarGen.Add(1) // a page created or navigating (JarChanges)
	}
	switch method {
	case "Target.targetCreated", "Target.targetInfoChanged":
		t := m.targets[ti.TargetID]
		isNew := t == nil
		if isNew {
			t = &target{id: ti.TargetID}
			// Chrome's paused auto-attach follows a new page's announcement (autoattach.go).
			t.awaitAuto = m.at.autoOn && ti.Type == "page" && method == "Target.targetCreated"
			m.addTargetLocked(t)
		}
		t.info = pr.TargetInfo
		if ti.URL != t.url || ti.Title != t.title {
			t.events++ // not for an attach or detach of a session (the shots' own among them)
		}
		t.typ, t.url, t.title, t.opener, t.context, t.parentFrame = ti.Type, ti.URL, ti.Title, ti.OpenerID, ti.BrowserContextID, ti.ParentFrameID
		t.seen = true
		if t.owner == nil {
			if t.closing {
				return
			}
			cl, park, claimed := m.attributeLocked(t, isNew && method == "Target.targetCreated")
			switch {
			case claimed:
				t.owner, t.held = cl, true
				m.touchTargetLocked(t)
			case cl != nil:
				m.ownLocked(t, cl, park)
			}
			return
		}
		if t.held {
			return // replayed with its latest info when the create is answered
		}
		m.taps.tabStepLocked(t)
		if m.closeStrayLocked(t) {
			return
		}
		if isNew || method == "Target.targetInfoChanged" {
			m.at.deliverTargetEventLocked(t, b)
		}
		if method == "Target.targetCreated" {
			// A replay after a reconnect: the owner's virtual auto-attach resumes.
			m.at.maybeAutoAttachLocked(t, nil)
		}
	case "Target.targetDestroyed", "Target.targetCrashed":
		t := m.targets[pr.TargetID]
		if t == nil {
			return
		}
		m.at.deliverTargetEventLocked(t, b)
		if method == "Target.targetDestroyed" {
			m.removeTargetLocked(t)
		}
	case "Target.attachedToTarget":
		var ti targetInfo
		json.Unmarshal(pr.TargetInfo, &ti)
		t := m.targets[ti.TargetID]
		if m.at.autoReplay || pr.WaitingForDebugger {
			m.at.chromeAttachedLocked(t, pr.SessionID, pr.WaitingForDebugger, b)
			return
		}
		if t != nil && t.owner != nil && t.owner.conn != nil && !t.closing {
			m.sessions[pr.SessionID] = &session{id: pr.SessionID, owner: t.owner, target: t, root: t}
			m.sendLocked(t.owner.conn, wholeFrame(b))
			return
		}
		// Nobody here wants this session: let the target run and let go of it.
		m.at.letGoLocked(t, pr.SessionID, pr.WaitingForDebugger, "")
	case "Target.detachedFromTarget":
		if s := m.sessions[pr.SessionID]; s != nil {
			delete(m.sessions, pr.SessionID)
			if s.owner.conn != nil {
				m.sendLocked(s.owner.conn, wholeFrame(b))
			}
		}
	case "Browser.downloadWillBegin":
		m.dl.willBeginLocked(b)
	case "Browser.downloadProgress":
		m.dl.progressEventLocked(b)
	}
}

// sessionEventLocked routes an event on a session to the session's owner. Child sessions (OOPIFs,
// workers) announced inside an owned session become that owner's.
func (m *Mux) sessionEventLocked(b []byte, info cdpwire.Info) {
	s := m.sessions[info.SessionID]
	// Operator sessions are never in m.sessions: a client's event pays only this nil check for them.
	if s == nil && m.op.eventLocked(b, info) {
		return
	}
	if s != nil {
		m.taps.jarEventLocked(info.Method, b)
		if s.root != nil {
			s.root.events++
		}
	}
	switch info.Method {
	case "Target.attachedToTarget":
		var ev upEvent
		if json.Unmarshal(b, &ev) != nil {
			return
		}
		if s == nil || s.owner.conn == nil {
			m.at.resumeLocked(ev.Params.SessionID, ev.Params.WaitingForDebugger)
			return
		}
		var ti targetInfo
		json.Unmarshal(ev.Params.TargetInfo, &ti)
		t := m.targets[ti.TargetID]
		if t != nil && t.owner != nil && t.owner != s.owner {
			// Never hand one client a session to another's target (a tab wrongly attributed).
			m.at.letGoLocked(t, ev.Params.SessionID, ev.Params.WaitingForDebugger, info.SessionID)
			return
		}
		if t != nil && t.owner == nil && !t.closing {
			t.owner = s.owner
			m.ownershipChangedLocked()
			m.taps.tabStepLocked(t)
		}
		root := s.root
		if t != nil && t.typ == "page" { // puppeteer's page inside its tab session
			root = t
			if s.target != nil && s.target.typ == "tab" {
				s.target.page = t
			}
		}
		m.sessions[ev.Params.SessionID] = &session{id: ev.Params.SessionID, owner: s.owner, target: t, root: root}
	case "Target.detachedFromTarget":
		var ev upEvent
		if json.Unmarshal(b, &ev) == nil {
			delete(m.sessions, ev.Params.SessionID)
		}
	}
	if s == nil || s.owner.conn == nil {
		return
	}
	m.sendLocked(s.owner.conn, wholeFrame(b))
}
