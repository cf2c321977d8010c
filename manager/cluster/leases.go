package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// A store's browser runs only on the host that holds the store's lease (SPEC §19 "Placement, exactly one"):
// an entry of the leases bucket naming the host, which the host renews by compare-and-set on the entry's
// revision. No clock is shared between hosts; each side reasons on its own monotonic clock:
//   - The holder counts its lease as proven from the moment it sent the last renewal that succeeded (not the
//     moment the answer came). Once stopAfter has passed since then without another success (it is cut off
//     from the cluster, or the cluster cannot write), it stops the store's browser: lost is called.
//   - Another host takes a lease only with a compare-and-set on a revision it first read at least TTL ago
//     on its own clock. The set succeeding proves that revision is still the newest, so the holder's last
//     successful renewal was sent before that first read, and the holder has stopped its browser
//     stopAfter later, well before the TTL was over.
// So two hosts never run one store, across a partition too, as long as a host can stop a browser within
// TTL - stopAfter - fenceEvery (4.5 s with the default TTL).

// DefaultLeaseTTL is how long a lease that is not renewed keeps its store from every other host.
const DefaultLeaseTTL = 10 * time.Second

// leaseValue is a lease entry.
type leaseValue struct {
	Host  string `json:"host"`
	Epoch uint64 `json:"epoch"` // one more at each new holder: a holder's renewals keep it
}

// heldLease is a lease this host holds.
type heldLease struct {
	rev    uint64    // the entry's revision this host wrote last
	epoch  uint64    // its epoch
	proven time.Time // when the write of rev was sent
}

// seenRevision is the revision of another host's lease this host read, and when it first read it.
type seenRevision struct {
	rev   uint64
	first time.Time
}

// HeldError is the refusal of a lease another host holds: Left is how long, at the most, until it may lapse.
type HeldError struct {
	Store, Host string
	Left        time.Duration
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("store %s runs on host %s (its lease may lapse in %s at the earliest, if that host stops renewing it)",
		e.Store, e.Host, e.Left.Round(time.Millisecond))
}

// LeaseConfig is how a host's leases behave.
type LeaseConfig struct {
	Host string        // this host
	TTL  time.Duration // DefaultLeaseTTL when 0
	// Lost is called, on a goroutine of its own, when a lease this host held is gone: taken by another host,
	// or not proven for stopAfter. The store's browser must stop at once (a kill, not a clean stop).
	Lost func(store, why string)
	Log  zerolog.Logger
	Now  func() time.Time // time.Now when nil (its monotonic clock is what counts)
}

// Leases are this host's side of the stores' leases. Its methods are safe for concurrent use.
type Leases struct {
	kv  jetstream.KeyValue
	cfg LeaseConfig
	wg  sync.WaitGroup // Lost's goroutines

	mu   sync.Mutex // guards the fields below
	held map[string]*heldLease
	seen map[string]seenRevision // store id -> another host's lease, as read here
}

// NewLeases is host's side of the leases kept in kv.
func NewLeases(kv jetstream.KeyValue, cfg LeaseConfig) *Leases {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultLeaseTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Lost == nil {
		cfg.Lost = func(string, string) {}
	}
	return &Leases{kv: kv, cfg: cfg, held: map[string]*heldLease{}, seen: map[string]seenRevision{}}
}

// renewEvery is how often the held leases are renewed; stopAfter how long a lease stays proven without a
// renewal; fenceEvery how often that is checked. stopAfter + fenceEvery + the browser's stop < TTL.
func (l *Leases) renewEvery() time.Duration { return l.cfg.TTL / 6 }
func (l *Leases) stopAfter() time.Duration  { return l.cfg.TTL / 2 }
func (l *Leases) fenceEvery() time.Duration { return l.cfg.TTL / 20 }

// Acquire takes store's lease for this host: a free one, one this host held before (its manager
// restarted), or another host's that has not moved for the TTL as seen from here. Another host's live lease
// is refused with a *HeldError.
func (l *Leases) Acquire(ctx context.Context, store string) error {
	l.mu.Lock()
	_, holding := l.held[store]
	l.mu.Unlock()
	if holding {
		return nil
	}
	e, err := l.kv.Get(ctx, store)
	sent := l.cfg.Now()
	var rev uint64
	next := leaseValue{Host: l.cfg.Host, Epoch: 1}
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		b, _ := json.Marshal(next)
		if rev, err = l.kv.Create(ctx, store, b); errors.Is(err, jetstream.ErrKeyExists) {
			return &HeldError{Store: store, Host: "another host", Left: l.cfg.TTL} // taken since the read
		}
	case err != nil:
	default:
		var cur leaseValue
		if jerr := json.Unmarshal(e.Value(), &cur); jerr != nil {
			l.cfg.Log.Warn().Err(jerr).Str("store", store).Msg("a lease entry that does not parse is taken over")
		}
		if cur.Host != l.cfg.Host {
			if left := l.waitLeft(store, e.Revision()); left > 0 {
				return &HeldError{Store: store, Host: cur.Host, Left: left}
			}
		}
		next.Epoch = cur.Epoch + 1
		b, _ := json.Marshal(next)
		if rev, err = l.kv.Update(ctx, store, b, e.Revision()); wrongRevision(err) {
			return &HeldError{Store: store, Host: cur.Host, Left: l.cfg.TTL} // renewed or taken since the read
		}
	}
	if err != nil {
		return fmt.Errorf("take the lease of store %s: %w", store, err)
	}
	l.mu.Lock()
	l.held[store] = &heldLease{rev: rev, epoch: next.Epoch, proven: sent}
	delete(l.seen, store)
	l.mu.Unlock()
	return nil
}

// waitLeft notes revision rev of another host's lease of store and says how long this host must still see
// it unchanged before it may take it.
func (l *Leases) waitLeft(store string, rev uint64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.seen[store]
	if !ok || s.rev != rev {
		s = seenRevision{rev: rev, first: l.cfg.Now()}
		l.seen[store] = s
	}
	return l.cfg.TTL - l.cfg.Now().Sub(s.first)
}

// Observe notes the revision of each lease in the bucket now, so that a lease its holder stops renewing can
// be taken one TTL after it last moved rather than one TTL after a first Acquire.
func (l *Leases) Observe(ctx context.Context) error {
	lister, err := l.kv.ListKeys(ctx)
	if err != nil {
		return err
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	for _, k := range keys {
		e, err := l.kv.Get(ctx, k)
		if err != nil {
			continue // gone since the listing
		}
		var cur leaseValue
		if json.Unmarshal(e.Value(), &cur) == nil && cur.Host == l.cfg.Host {
			continue
		}
		l.waitLeft(k, e.Revision())
	}
	return nil
}

// Holds reports whether this host holds store's lease and it is proven: the store's browser may run here.
func (l *Leases) Holds(store string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.held[store]
	return ok && l.cfg.Now().Sub(h.proven) < l.stopAfter()
}

// Held lists the stores whose leases this host holds.
func (l *Leases) Held() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.held))
	for s := range l.held {
		out = append(out, s)
	}
	return out
}

// Release gives store's lease up (its browser stopped cleanly here): the entry is deleted if it is still
// this host's, so that another host may take the store at once.
func (l *Leases) Release(ctx context.Context, store string) error {
	l.mu.Lock()
	h, ok := l.held[store]
	delete(l.held, store)
	l.mu.Unlock()
	if !ok {
		return nil
	}
	if err := l.kv.Delete(ctx, store, jetstream.LastRevision(h.rev)); err != nil && !wrongRevision(err) {
		return fmt.Errorf("release the lease of store %s: %w", store, err)
	}
	return nil
}

// Run renews the held leases and fences them until ctx ends, then waits for the Lost calls it started.
func (l *Leases) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { Every(ctx, l.renewEvery(), l.renewAll) })
	wg.Go(func() { Every(ctx, l.fenceEvery(), func(context.Context) { l.fence() }) })
	wg.Wait()
	l.wg.Wait()
}

// Every runs do every period until ctx ends (the cluster's loops: renewals, fences, failover, observations).
func Every(ctx context.Context, period time.Duration, do func(context.Context)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			do(ctx)
		}
	}
}

// renewAll renews each held lease once, the whole round bounded by renewEvery.
func (l *Leases) renewAll(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, l.renewEvery())
	defer cancel()
	for _, store := range l.Held() {
		l.renew(ctx, store)
	}
}

// renew writes store's lease again on the revision this host wrote last. A write that lost to another
// host's loses the lease; one that found this host's own newer write (an answer lost on the way) goes on
// from it.
func (l *Leases) renew(ctx context.Context, store string) {
	l.mu.Lock()
	h, ok := l.held[store]
	var mine heldLease
	if ok {
		mine = *h
	}
	l.mu.Unlock()
	if !ok {
		return
	}
	b, _ := json.Marshal(leaseValue{Host: l.cfg.Host, Epoch: mine.epoch})
	sent := l.cfg.Now()
	rev, err := l.kv.Update(ctx, store, b, mine.rev)
	if wrongRevision(err) {
		e, gerr := l.kv.Get(ctx, store)
		var cur leaseValue
		if gerr == nil && json.Unmarshal(e.Value(), &cur) == nil && cur == (leaseValue{Host: l.cfg.Host, Epoch: mine.epoch}) {
			rev, err = e.Revision(), nil // this host's own write: proven no later than before it
			sent = mine.proven
		} else {
			by := "deleted"
			if gerr == nil {
				by = "taken by host " + cur.Host
			}
			l.lose(store, mine.rev, "its lease was "+by)
			return
		}
	}
	if err != nil {
		l.cfg.Log.Debug().Err(err).Str("store", store).Msg("renew a lease")
		return // fence decides, once stopAfter has passed
	}
	l.mu.Lock()
	if h, ok := l.held[store]; ok && h.rev == mine.rev {
		h.rev, h.proven = rev, sent
	}
	l.mu.Unlock()
}

// fence loses every held lease not proven for stopAfter.
func (l *Leases) fence() {
	now := l.cfg.Now()
	l.mu.Lock()
	var stale []string
	var revs []uint64
	for s, h := range l.held {
		if now.Sub(h.proven) >= l.stopAfter() {
			stale, revs = append(stale, s), append(revs, h.rev)
		}
	}
	l.mu.Unlock()
	for i, s := range stale {
		l.lose(s, revs[i], fmt.Sprintf("its lease was not renewed for %s (cut off from the cluster?)", l.stopAfter()))
	}
}

// lose drops store's lease, if this host still holds it at revision rev, and calls Lost for it.
func (l *Leases) lose(store string, rev uint64, why string) {
	l.mu.Lock()
	h, ok := l.held[store]
	if !ok || h.rev != rev {
		l.mu.Unlock()
		return
	}
	delete(l.held, store)
	l.mu.Unlock()
	l.cfg.Log.Warn().Str("store", store).Str("why", why).Msg("lease lost: the store's browser stops here")
	l.wg.Go(func() { l.cfg.Lost(store, why) })
}
