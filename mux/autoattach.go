package mux

import "bytes"

// Chrome's own auto-attach on the mux's connection: every new page is attached to the mux paused
// (waitForDebuggerOnStart), so that a client which asked Chrome to pause its new targets gets its popup
// before the popup has run a line or loaded its document, as on Chrome. Without it a popup races its
// client: playwright, told of a popup that already navigated, misses its load event. Each paused page goes
// at once either to its owner (still paused when the owner asked for that) or back to running, with the
// mux's session let go; no other tenant's page waits on a client.

// upstreamAutoAttach asks Chrome to attach the mux to every page, paused. Pages only: tabs, workers and
// frames go through the clients' own attaches and the virtual auto-attach as before.
var upstreamAutoAttach = []byte(`{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true,"filter":[{"type":"page"}]}`)

// startAutoAttachLocked turns Chrome's auto-attach on for a new connection. It is sent after discovery:
// pages Chrome replays as attached before the answer existed already and are let go (autoReplay); a page
// announced after the answer is new and arrives paused. A browser that refuses it keeps the virtual
// auto-attach alone.
func (m *Mux) startAutoAttachLocked(up *upstream) {
	m.autoReplay, m.autoOn = true, false
	m.sendInternalLocked("Target.setAutoAttach", upstreamAutoAttach, "", func(_ []byte, failed bool) {
		if m.up != up {
			return
		}
		m.autoReplay, m.autoOn = false, !failed
		if failed {
			m.log.Info().Msg("browser refused Target.setAutoAttach: new pages are not paused for their clients")
		}
	})
}

// chromeAttachedLocked takes one of Chrome's auto-attaches (a browser-level attachedToTarget with
// waitingForDebugger, or any attach while the replay runs): the owner's virtual auto-attach when it asked
// for one and has none, else the page runs and the mux lets go. b is Chrome's event.
func (m *Mux) chromeAttachedLocked(t *target, sid string, waiting bool, b []byte) {
	if t != nil && !m.autoReplay {
		t.awaitAuto = false
		if c := m.autoAttachConnLocked(t); c != nil && t.info != nil {
			t.autoConn = c
			// Chrome announced the flip of "attached" before the attach, while it was the mux's: now it is
			// the owner's, in Chrome's order.
			m.deliverTargetEventLocked(t, eventFrame("Target.targetInfoChanged", targetInfoParams(t.info)).head)
			m.sessions[sid] = &session{id: sid, owner: t.owner, target: t, root: t}
			if waiting && !c.autoWait {
				b = bytes.Replace(b, []byte(`"waitingForDebugger":true`), []byte(`"waitingForDebugger":false`), 1)
				m.resumeLocked(sid, true)
			}
			m.sendLocked(c, wholeFrame(b))
			return
		}
	}
	m.letGoLocked(t, sid, waiting, "")
}

// resumeLocked lets a target Chrome paused for session sid run, if it waits for a debugger.
func (m *Mux) resumeLocked(sid string, waiting bool) {
	if waiting && sid != "" {
		m.sendInternalLocked("Runtime.runIfWaitingForDebugger", nil, sid, nil)
	}
}

// letGoLocked lets go of a session Chrome gave the mux that nobody here may have: its target runs
// (resumeLocked) and the session is detached on parent (the session it was announced on; "" for the
// browser). t is its target, when the mux knows it: until the detach is answered, a change of t's
// "attached" alone is the mux's and is not shown to the owner (muxAttachLocked).
func (m *Mux) letGoLocked(t *target, sid string, waiting bool, parent string) {
	if sid == "" {
		return
	}
	m.resumeLocked(sid, waiting)
	var done func([]byte, bool)
	if t != nil {
		t.lettingGo++
		done = func([]byte, bool) { t.lettingGo-- }
	}
	m.sendInternalLocked("Target.detachFromTarget", sessionParams(sid), parent, done)
}

// sessionParams is the params {"sessionId":sid}.
func sessionParams(sid string) []byte {
	return append(appendJSONString([]byte(`{"sessionId":`), sid), '}')
}

// muxAttachLocked reports whether a session of the mux's own may have flipped t's "attached": Chrome's paused
// auto-attach is being replayed or is due, one of the mux's sessions on t is being let go, or an operator
// session attached to t once (its coming and going flip it for as long as t lives).
func (m *Mux) muxAttachLocked(t *target) bool {
	return m.autoReplay || t.awaitAuto || t.lettingGo > 0 || t.opSeen
}

// attachFlipHiddenLocked reports whether info, a targetInfoChanged of t, changes nothing but "attached"
// while that may be the mux's own session coming or going (muxAttachLocked): then it is no event for the
// owner, nor activity. Any other change goes to the owner with the "attached" it would see without the
// mux's sessions (ownerInfoLocked).
func (m *Mux) attachFlipHiddenLocked(t *target, info []byte) bool {
	if t.info == nil || !m.muxAttachLocked(t) {
		return false
	}
	return bytes.Equal(withAttached(t.info, false), withAttached(info, false))
}
