package browsers

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"vibebrowser/mux"
)

// slot is the place of one browser key (a store id or api.WebKey): its lock, its running Instance and its
// relaunch budget. A slot outlives the browsers started in it.
type slot struct {
	key string
	// lock is the per-store lock, a one-slot semaphore so that waiting honours contexts. It is held across
	// start, stop and the idle decision, never across two stores.
	lock chan struct{}
	cur  atomic.Pointer[Instance] // read without the lock by status and metrics
	// ep is the key's endpoint, bound for the store's life. Set under lock (endpointLocked), taken away
	// under it when the store is removed and at quit; read without it by the endpoint's own front.
	ep atomic.Pointer[endpoint]

	// snapSem is held by whoever reads or replaces the profile for a snapshot (a stop's, taken after the lock
	// is released; a running browser's, taken without it) or a restore; a start takes it, and lets go, before
	// it touches the profile.
	snapSem chan struct{}

	// guarded by lock:
	budget relaunchBudget
	state  slotState // where its browser is in its life; the transitions are in slotstate.go
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

// current returns the running Instance, or nil when the browser is stopped or dead.
func (s *slot) current() *Instance {
	if in := s.cur.Load(); in != nil && in.healthy() {
		return in
	}
	return nil
}

// Current returns key's running browser, or nil when it is stopped or dead.
func (f *Fleet) Current(key string) *Instance { return f.slot(key).current() }

// Running returns every running browser.
func (f *Fleet) Running() []*Instance {
	var out []*Instance
	for _, s := range f.slots() {
		if in := s.current(); in != nil {
			out = append(out, in)
		}
	}
	return out
}

// Port returns key's endpoint port, bound while the store exists whether its browser runs or not; 0 when
// it is not bound.
func (f *Fleet) Port(key string) int {
	if ep := f.slot(key).ep.Load(); ep != nil {
		return ep.port
	}
	return 0
}

// slot returns key's slot, creating it on first use.
func (f *Fleet) slot(key string) *slot {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.byKey[key]
	if s == nil {
		s = &slot{key: key, lock: make(chan struct{}, 1), snapSem: make(chan struct{}, 1), budget: f.newBudget(key)}
		f.byKey[key] = s
	}
	return s
}

// Forget drops the slot of a store that is gone (or was never created).
func (f *Fleet) Forget(key string) {
	f.mu.Lock()
	delete(f.byKey, key)
	f.mu.Unlock()
}

// slots returns every slot.
func (f *Fleet) slots() []*slot {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]*slot, 0, len(f.byKey))
	for _, s := range f.byKey {
		out = append(out, s)
	}
	return out
}

// Instance is one running browser with its mux. It is replaced as a whole, never mutated (but for its last
// ensure).
type Instance struct {
	spec      Spec
	browser   handle
	mux       *mux.Mux
	port      int // its endpoint's
	startedAt time.Time
	cancel    context.CancelFunc // ends the mux's Serve
	served    chan struct{}      // closed when Serve has returned
	logins    *loginKeeper       // its login's checkpoints (SPEC §18), nil when not kept; the mux's, like served

	// lastEnsure is the last ensure that handed this browser out (unix nanos). A shim connects right after
	// its ensure, so the idle sweep counts a recent ensure as activity.
	lastEnsure atomic.Int64
}

// healthy reports whether both the browser and its mux are still up.
func (in *Instance) healthy() bool {
	select {
	case <-in.browser.Done():
		return false
	case <-in.served:
		return false
	default:
		return true
	}
}

// Spec is what the browser was started from.
func (in *Instance) Spec() Spec { return in.spec }

// Mux is the browser's mux.
func (in *Instance) Mux() *mux.Mux { return in.mux }

// PID is the browser's process id; 0 when the manager runs no process for it.
func (in *Instance) PID() int { return in.browser.PID() }

// KeeperPID is the pid of the keeper holding the browser's pipe; 0 for a browser on a port or someone else's.
func (in *Instance) KeeperPID() int {
	if k, ok := in.browser.(interface{ KeeperPID() int }); ok {
		return k.KeeperPID()
	}
	return 0
}

// KeeperDir is the folder of the keeper holding the browser's pipe, where its socket, identity, log and
// forwarder status are (keeper.ForwardStatusPath): run/, or run/keepers/<browser user>/; "" for a browser on
// a port or someone else's.
func (in *Instance) KeeperDir() string {
	socket, ok := strings.CutPrefix(in.browser.Endpoint(), "unix:")
	if !ok {
		return ""
	}
	return filepath.Dir(socket)
}

// StartedAt is when this browser was started (or adopted, or relaunched).
func (in *Instance) StartedAt() time.Time { return in.startedAt }

// Port is its endpoint's port.
func (in *Instance) Port() int { return in.port }
