package browsers

import "testing"

// TestSlotStates walks a slot through its transitions and checks what stateLocked and retiringLocked say
// of the Instance a caller found there at each step.
func TestSlotStates(t *testing.T) {
	newInstance := func() *Instance {
		return &Instance{browser: &fakeHandle{done: make(chan struct{})}, served: make(chan struct{})}
	}
	s := &slot{key: "k"}
	a, b := newInstance(), newInstance()
	check := func(step string, in *Instance, want slotState, retiring bool) {
		t.Helper()
		if got := s.stateLocked(in); got != want {
			t.Errorf("%s: stateLocked = %d; want %d", step, got, want)
		}
		if got := s.retiringLocked(in); got != retiring {
			t.Errorf("%s: retiringLocked = %v; want %v", step, got, retiring)
		}
	}
	check("a new slot", nil, slotStopped, false)
	s.installLocked(a)
	check("installed", a, slotRunning, false)
	close(a.browser.(*fakeHandle).done)
	check("its browser exited", a, slotDead, false)
	s.installLocked(b) // relaunched behind the same mux
	check("the old one after a relaunch", a, slotStopped, false)
	check("relaunched", b, slotRunning, false)
	s.retireLocked(a) // not the slot's: nothing changes
	check("retiring another", b, slotRunning, false)
	s.retireLocked(b)
	check("retired", b, slotRetiring, true)
	close(b.served)
	check("its mux ended", b, slotDead, true)
	s.clearLocked(a) // not the slot's: nothing changes
	check("clearing another", b, slotDead, true)
	s.clearLocked(b)
	check("buried", b, slotStopped, false)
	check("buried, as a new caller finds it", s.cur.Load(), slotStopped, false)
	s.removeLocked()
	check("removed", nil, slotGone, false)
}
