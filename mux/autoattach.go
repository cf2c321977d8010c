package mux

import "bytes"

// Chrome's own auto-attach on the mux's connection: every new page is attached to the mux paused
// (waitForDebuggerOnStart), so that a client which asked Chrome to pause its new targets gets its popup
// before the popup has run a line or loaded its document, as on Chrome. Without it a popup races its
// client: playwright, told of a popup that already navigated, misses its load event. Each paused page goes
// at once either to its owner (still paused when the owner asked for that) or back to running, with the
// mux's session let go; no other tenant's page waits on a client.

// attachments is the mux's side of attaching: the virtual discovery and auto-attach it plays per client
// (virtual.go), Chrome's own auto-attach on its connection, and the "attached" an owner sees without the
// mux's own sessions. Its state and the targets' and connections' attach fields are guarded by Mux.mu.
type attachments struct {
	m *Mux
	// autoReplay while Chrome's auto-attach replays the existing pages, autoOn once new pages arrive paused.
	autoReplay, autoOn bool
}

// upstreamAutoAttach asks Chrome to attach the mux to every page, paused. Pages only: tabs, workers and
// frames go through the clients' own attaches and the virtual auto-attach as before.
var upstreamAutoAttach = []byte(`{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true,"filter":[{"type":"page"}]}`)

// startAutoAttachLocked turns Chrome's auto-attach on for a new connection. It is sent after discovery:
// pages Chrome replays as attached before the answer existed already and are let go (autoReplay); a page
// announced after the answer is new and arrives paused. A browser that refuses it keeps the virtual
// auto-attach alone.
func (a *attachments) startAutoAttachLocked(up *upstream) {
	m := a.m
	a.autoReplay, a.autoOn = true, false
	m.sendInternalLocked("Target.setAutoAttach", upstreamAutoAttach, "", func(_ []byte, failed bool) {
		if m.up != up {
			return
		}
		a.autoReplay, a.autoOn = false, !failed
		if failed {
			m.log.Info().Msg("browser refused Target.setAutoAttach: new pages are not paused for their clients")
		}
	})
}

// chromeAttachedLocked takes one of Chrome's auto-attaches (a browser-level attachedToTarget with
// waitingForDebugger, or any attach while the replay runs): the owner's virtual auto-attach when it asked
// for one and has none, else the page runs and the mux lets go. b is Chrome's event.
func (a *attachments) chromeAttachedLocked(t *target, sid string, waiting bool, b []byte) {
	m := a.m
	if t != nil && !a.autoReplay {
		t.awaitAuto = false
		if c := a.autoAttachConnLocked(t); c != nil && t.info != nil {
			t.autoConn = c
			// Chrome announced the flip of "attached" before the attach, while it was the mux's: now it is
			// the owner's, in Chrome's order.
			a.deliverTargetEventLocked(t, eventFrame("Target.targetInfoChanged", targetInfoParams(t.info)).head)
			m.sessions[sid] = &session{id: sid, owner: t.owner, target: t, root: t}
			if waiting && !c.autoWait {
				b = bytes.Replace(b, []byte(`"waitingForDebugger":true`), []byte(`"waitingForDebugger":false`), 1)
				a.resumeLocked(sid, true)
			}
			m.sendLocked(c, wholeFrame(b))
			return
		}
	}
	a.letGoLocked(t, sid, waiting, "")
}

// resumeLocked lets a target Chrome paused for session sid run, if it waits for a debugger.
func (a *attachments) resumeLocked(sid string, waiting bool) {
	m := a.m
	if waiting && sid != "" {
		m.sendInternalLocked("Runtime.runIfWaitingForDebugger", nil, sid, nil)
	}
}

// letGoLocked lets go of a session Chrome gave the mux that nobody here may have: its target runs
// (resumeLocked) and the session is detached on parent (the session it was announced on; "" for the
// browser). t is its target, when the mux knows it: until the detach is answered, a change of t's
// "attached" alone is the mux's and is not shown to the owner (muxAttachLocked).
func (a *attachments) letGoLocked(t *target, sid string, waiting bool, parent string) {
	m := a.m
	if sid == "" {
		return
	}
	a.resumeLocked(sid, waiting)
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
func (a *attachments) muxAttachLocked(t *target) bool {
	return a.autoReplay || t.awaitAuto || t.lettingGo > 0 || t.opSeen
}

// attachFlipHiddenLocked reports whether info, a targetInfoChanged of t, changes nothing but "attached"
// while that may be the mux's own session coming or going (muxAttachLocked): then it is no event for the
// owner, nor activity. Any other change goes to the owner with the "attached" it would see without the
// mux's sessions (ownerInfoLocked).
func (a *attachments) attachFlipHiddenLocked(t *target, info []byte) bool {
	if t.info == nil || !a.muxAttachLocked(t) {
		return false
	}
	return bytes.Equal(withAttached(t.info, false), withAttached(info, false))
}

// ownerInfoLocked returns Chrome's bytes b about t (a targetInfo, or an event holding one) with the
// "attached" its owner would see without the mux's own sessions: whether the owner has a session on t.
// Only targets the mux's sessions may have flipped pay for it (a scan of the sessions).
func (a *attachments) ownerInfoLocked(t *target, b []byte) []byte {
	if !a.muxAttachLocked(t) {
		return b
	}
	return withAttached(b, a.ownerAttachedLocked(t))
}

func (a *attachments) ownerAttachedLocked(t *target) bool {
	m := a.m
	for _, s := range m.sessions {
		if s.target == t {
			return true
		}
	}
	return false
}

// withAttached sets the "attached" of a targetInfo in Chrome's bytes b. A byte replace is exact here:
// inside a JSON string the key's quotes would be escaped, and Chrome writes no spaces.
func withAttached(b []byte, attached bool) []byte {
	from, to := []byte(`"attached":true`), []byte(`"attached":false`)
	if attached {
		from, to = to, from
	}
	if !bytes.Contains(b, from) {
		return b
	}
	return bytes.ReplaceAll(b, from, to)
}
