package browsers

// slotState is where a slot's browser is in its life. The slot's lock guards it; the running Instance
// itself is also published in slot.cur for readers without the lock. The transitions below are the only
// ways between states, each made under the lock:
//
//	stopped  ─install──▶ running    a start or an adoption (Fleet.install)
//	running  ─(exits)──▶ dead       the browser died on its own; no transition: its watcher, or the next
//	                                ensure, finds it so (stateLocked)
//	dead     ─relaunch─▶ running    a crash its backend repairs: a fresh browser behind the same mux
//	                                (relaunchCrashedLocked, then install)
//	running  ─relaunch─▶ running    a hung browser, at its mux's hook (relaunchHung, then install)
//	running  ─retire───▶ retiring   the hung browser's relaunch failed: its mux is ending (relaunchHung)
//	dead     ─bury─────▶ stopped    any other death, charged to the relaunch budget (buryLocked)
//	retiring ─bury─────▶ stopped    once the retiring browser's mux has let go
//	running  ─stop─────▶ stopped    a stop, the idle sweep, the quit barrier (teardownLocked)
//	stopped  ─remove───▶ gone       the store was removed: nothing starts in the slot again (Fleet.Remove)
type slotState int

const (
	slotStopped  slotState = iota // no browser: cur is nil
	slotRunning                   // cur runs, or has just died (stateLocked tells dead)
	slotRetiring                  // cur is being buried: never relaunched, its stop is no clean one
	slotGone                      // the store was removed
	slotDead                      // not stored: what stateLocked says of a slot whose browser or mux ended
)

// stateLocked is the state of the slot as far as in, the Instance the caller found there, is concerned: stopped
// when in is no longer the slot's, dead when its browser or its mux ended (retiring or not: retiringLocked
// tells). The caller holds the lock.
func (s *slot) stateLocked(in *Instance) slotState {
	switch {
	case s.state == slotGone:
		return slotGone
	case in == nil || s.cur.Load() != in:
		return slotStopped
	case !in.healthy():
		return slotDead
	}
	return s.state
}

// retiringLocked reports whether in is the slot's retiring browser, alive or dead.
func (s *slot) retiringLocked(in *Instance) bool {
	return s.state == slotRetiring && s.cur.Load() == in
}

// installLocked makes in the slot's running browser: a start, an adoption or a relaunch put in use.
func (s *slot) installLocked(in *Instance) {
	s.cur.Store(in)
	s.state = slotRunning
}

// retireLocked marks the running in as retiring: its relaunch failed and its mux is ending.
func (s *slot) retireLocked(in *Instance) {
	if s.cur.Load() == in {
		s.state = slotRetiring
	}
}

// clearLocked records in stopped, if it is still the slot's browser.
func (s *slot) clearLocked(in *Instance) {
	if s.cur.CompareAndSwap(in, nil) {
		s.state = slotStopped
	}
}

// removeLocked records the store removed; its browser was stopped first.
func (s *slot) removeLocked() { s.state = slotGone }
