package handoffs

import "sync"

// handoffHub wakes the shims waiting on a handoff when it changes, and the expiry loop when one is made.
// Its zero value is ready.
type handoffHub struct {
	mu      sync.Mutex               // mu guards the fields below
	waiters map[string]chan struct{} // handoff id -> closed at its next change
	kick    chan struct{}            // one pending wake-up of the expiry loop is enough: capacity 1
}

// watch returns a channel closed at the next change of handoff id. Take it before reading the handoff,
// so a change in between is never missed.
func (h *handoffHub) watch(id string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiters == nil {
		h.waiters = map[string]chan struct{}{}
	}
	ch, ok := h.waiters[id]
	if !ok {
		ch = make(chan struct{})
		h.waiters[id] = ch
	}
	return ch
}

// changed wakes everyone watching handoff id.
func (h *handoffHub) changed(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if ch, ok := h.waiters[id]; ok {
		close(ch)
		delete(h.waiters, id)
	}
}

func (h *handoffHub) kicks() chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.kick == nil {
		h.kick = make(chan struct{}, 1)
	}
	return h.kick
}

// wake tells the expiry loop that a deadline may have moved closer.
func (h *handoffHub) wake() {
	select {
	case h.kicks() <- struct{}{}:
	default: // one is already pending
	}
}
