package mux

import (
	"time"

	"vibebrowser/mux/errdefs"
)

// Takeover: a person holds a client's tab through a View (SPEC §11). While a tab is held, every command
// its owner sends on a session of it, and its attach, close and activation, is answered with HeldMessage
// and nothing reaches the browser; events still flow to the owner, so it sees what the person did. A hold
// has one holder (an id of the operator's choosing: the UI's viewer), survives its holder's views closing
// for HoldGrace (a reconnecting viewer takes it up again), and ends on Release or when the tab closes.
// The tab cap never closes a held tab. Taking a tab over brings it to the front of its window (the one
// thing a takeover changes for other tabs: the one that was in front goes behind it).

// HeldMessage is the CDP error (code -32000) a client's command on a held tab gets.
const HeldMessage = "a person is controlling this tab in vibe-browser; wait for them to release it"

// ErrHeldByOther: Hold of a tab another holder holds; of class errdefs.ErrConflict.
var ErrHeldByOther = errdefs.Conflict("mux: this tab is held by another viewer")

// released is why a hold ends on its holder's Release (endHoldLocked).
const released = "released"

// hold is a person's hold of one page, guarded by Mux.mu.
type hold struct {
	holder string
	views  map[*View]bool // the holder's views of the tab that hold it (View.Holding)
	grace  *time.Timer    // runs while views is empty: the hold ends when it fires
}

// Hold takes the view's tab for holder (or keeps it: a holder's second view, or its view after a
// reconnect within the grace). It fails with ErrHeldByOther when someone else holds the tab, and with the
// view's error once the view has ended.
func (v *View) Hold(holder string) error {
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if v.ended {
		return v.err
	}
	if v.holdingLocked() {
		return nil
	}
	t := v.sess.target
	if t.closing || m.targets[t.id] != t {
		return ErrTargetClosed
	}
	h := t.hold
	if h == nil {
		h = &hold{holder: holder, views: map[*View]bool{}}
		t.hold = h
		// Chrome delivers input to a tab behind another of its window about once in 5 s: the person's tab
		// comes to the front. (Watching alone never does this; taking over is the person acting.)
		m.sendInternalLocked("Page.bringToFront", nil, v.sess.id, nil)
		m.log.Info().Str("target", t.id).Str("owner", ownerID(t)).Msg("tab taken over by a person")
		m.taps.holdStepLocked(t, HoldTaken, holder, "")
	} else if h.holder != holder {
		return ErrHeldByOther
	}
	if h.grace != nil {
		h.grace.Stop()
		h.grace = nil
	}
	h.views[v] = true
	return nil
}

// Release gives the view's tab back to its owner, if the view holds it.
func (v *View) Release() {
	m := v.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if v.holdingLocked() {
		m.op.endHoldLocked(v.sess.target, released)
	}
}

// Holding reports whether the view holds its tab.
func (v *View) Holding() bool {
	v.m.mu.Lock()
	defer v.m.mu.Unlock()
	return v.holdingLocked()
}

// holdingLocked reports whether the view is one of those holding its tab's hold.
func (v *View) holdingLocked() bool {
	return v.sess != nil && v.sess.target.hold != nil && v.sess.target.hold.views[v]
}

// HeldBy returns the holder of the view's tab ("" when nobody holds it): this view's holder or another's.
func (v *View) HeldBy() string {
	v.m.mu.Lock()
	defer v.m.mu.Unlock()
	if v.sess == nil || v.sess.target.hold == nil {
		return ""
	}
	return v.sess.target.hold.holder
}

// unholdLocked lets go of the view's part in its tab's hold when the view ends: after the holder's last
// view, the hold lasts HoldGrace more.
func (v *View) unholdLocked() {
	if !v.holdingLocked() {
		return
	}
	m, t := v.m, v.sess.target
	h := t.hold
	if delete(h.views, v); len(h.views) > 0 {
		return
	}
	if m.cfg.HoldGrace == Off || m.closed {
		m.op.endHoldLocked(t, "its viewer left")
		return
	}
	h.grace = time.AfterFunc(m.cfg.HoldGrace, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if t.hold == h && len(h.views) == 0 {
			m.op.endHoldLocked(t, "its viewer has been gone for the grace period")
		}
	})
}

// endHoldLocked ends t's hold, whatever views hold it (Release, grace, the tab closing).
func (o *Operator) endHoldLocked(t *target, why string) {
	m := o.m
	h := t.hold
	if h == nil {
		return
	}
	if h.grace != nil {
		h.grace.Stop()
	}
	t.hold = nil
	m.taps.jarGen.Add(1) // what the person typed may have logged the store in (JarChanges)
	m.log.Info().Str("target", t.id).Str("owner", ownerID(t)).Str("why", why).Msg("tab given back by a person")
	if why == released {
		why = "" // the timeline says why only when the holder did not let go
	}
	m.taps.holdStepLocked(t, HoldReleased, h.holder, why)
	if t.closeOnRelease {
		t.closeOnRelease = false
		if m.targets[t.id] == t {
			m.closeTargetLocked(t) // its owner closed its tabs (or its grace ran out) while the person held it
		}
	}
}

// sessionHeld reports whether a command on sess must be refused: a person holds its tab (the session is
// on the tab or on one of its frames).
func sessionHeld(sess *session) bool {
	return sess != nil && sess.root != nil && sess.root.hold != nil
}

// targetHeld reports whether method on target t must be refused: attaching to, closing or activating a
// held tab, or the tab target of a held page (closing it closes the page).
func targetHeld(method string, t *target) bool {
	if t.hold == nil && (t.page == nil || t.page.hold == nil) {
		return false
	}
	switch method {
	case "Target.attachToTarget", "Target.closeTarget", "Target.activateTarget":
		return true
	}
	return false
}

func ownerID(t *target) string {
	if t.owner == nil {
		return ""
	}
	return t.owner.id
}

// targetGoneLocked (a feature hook) ends the hold of a tab that closed.
func (o *Operator) targetGoneLocked(t *target) { o.endHoldLocked(t, "the tab closed") }
