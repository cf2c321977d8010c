package manager

import (
	"context"
	"sync/atomic"
	"time"

	"vibebrowser/mux"
)

// slot is the place of one browser key (a store id or api.WebKey): its lock, its running instance and its
// relaunch budget. A slot outlives the browsers started in it.
type slot struct {
	key string
	// lock is the per-store lock, a one-slot semaphore so that waiting honours contexts. It is held across
	// start, stop and the idle decision, never across two stores.
	lock chan struct{}
	cur  atomic.Pointer[instance] // read without the lock by status and metrics
	// ep is the key's endpoint, bound for the store's life. Set under lock (endpointLocked), taken away
	// under it when the store is removed and at quit; read without it by the endpoint's own front.
	ep atomic.Pointer[endpoint]

	// guarded by lock:
	budget   relaunchBudget
	retiring *instance // its relaunch failed and its mux is ending: bury it, never relaunch it
	gone     bool      // the store was removed: nothing starts here again
}

func (s *slot) acquire(ctx context.Context) error {
	select {
	case s.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *slot) release() { <-s.lock }

// current returns the running instance, or nil when the browser is stopped or dead.
func (s *slot) current() *instance {
	if in := s.cur.Load(); in != nil && in.healthy() {
		return in
	}
	return nil
}

// slot returns key's slot, creating it on first use.
func (m *Manager) slot(key string) *slot {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.byKey[key]
	if s == nil {
		s = &slot{key: key, lock: make(chan struct{}, 1), budget: m.newBudget(key)}
		m.byKey[key] = s
	}
	return s
}

// forgetSlot drops a deleted store's slot.
func (m *Manager) forgetSlot(key string) {
	m.mu.Lock()
	delete(m.byKey, key)
	m.mu.Unlock()
}

// slots returns every slot.
func (m *Manager) slots() []*slot {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*slot, 0, len(m.byKey))
	for _, s := range m.byKey {
		out = append(out, s)
	}
	return out
}

// instance is one running browser with its mux. It is replaced as a whole, never mutated.
type instance struct {
	spec      spec
	browser   handle
	mux       *mux.Mux
	port      int // its endpoint's
	startedAt time.Time
	cancel    context.CancelFunc // ends the mux's Serve
	served    chan struct{}      // closed when Serve has returned

	// lastEnsure is the last ensure that handed this browser out (unix nanos). A shim connects right after
	// its ensure, so the idle sweep counts a recent ensure as activity.
	lastEnsure atomic.Int64
}

// healthy reports whether both the browser and its mux are still up.
func (in *instance) healthy() bool {
	select {
	case <-in.browser.Done():
		return false
	case <-in.served:
		return false
	default:
		return true
	}
}
