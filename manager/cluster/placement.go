package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// A store belongs to one host: its entry in the placement bucket names it (SPEC §19). `store add --host H`
// names it; otherwise the rule does: the live host with the most free memory per store placed on it. A
// placement moves by compare-and-set on its revision, so of two hosts that move one store at once (a
// failover seen by both), one wins.

// ErrNotPlaced is Lookup's answer for a store placed nowhere yet.
var ErrNotPlaced = errors.New("the store is not placed on any host yet")

// ErrNoHost is the refusal to place a store when no live host can take it.
var ErrNoHost = errors.New("no live host can take the store")

// PlacedError is the refusal to place a store that is placed already.
type PlacedError struct{ Store, Host string }

func (e *PlacedError) Error() string {
	return fmt.Sprintf("store %s is placed on host %s already (store move moves it)", e.Store, e.Host)
}

// placedValue is a placement entry.
type placedValue struct {
	Host string `json:"host"`
}

// placedSeen is a store's placement as read here.
type placedSeen struct {
	host string
	rev  uint64
}

// Placement is this host's view of where every store belongs, and its way to change it. Its methods are
// safe for concurrent use.
type Placement struct {
	kv    jetstream.KeyValue
	hosts *Hosts
	log   zerolog.Logger

	mu      sync.Mutex // guards the fields below
	byStore map[string]placedSeen
}

// NewPlacement is the placement kept in kv, judged with the hosts' heartbeats.
func NewPlacement(kv jetstream.KeyValue, hosts *Hosts, log zerolog.Logger) *Placement {
	return &Placement{kv: kv, hosts: hosts, log: log, byStore: map[string]placedSeen{}}
}

// Where is the host store belongs to, as last seen here.
func (p *Placement) Where(store string) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.byStore[store]
	return s.host, ok
}

// Counts is how many stores each host has, as seen here.
func (p *Placement) Counts() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := map[string]int{}
	for _, s := range p.byStore {
		n[s.host]++
	}
	return n
}

// Choose is the host the rule gives a store: of the live hosts with a door, not in exclude, the one with the
// most free memory per store placed on it (one more counted for the store to come); ties go to the first name.
func (p *Placement) Choose(exclude ...string) (string, error) {
	counts := p.Counts()
	best, bestScore := "", -1.0
	for _, h := range p.hosts.View() {
		if !h.Alive || h.Advertise == "" || slices.Contains(exclude, h.Host) {
			continue
		}
		score := float64(h.FreeMem) / float64(counts[h.Host]+1)
		if score > bestScore {
			best, bestScore = h.Host, score
		}
	}
	if best == "" {
		return "", ErrNoHost
	}
	return best, nil
}

// Place places store on host, or where the rule says when host is "". It returns the host. A host named must
// be one the cluster knows (it has beaten at least once).
func (p *Placement) Place(ctx context.Context, store, host string) (string, error) {
	if host != "" && !p.hosts.Exists(ctx, host) {
		return "", fmt.Errorf("place store %s: no host %s in the cluster (its hosts: %s)", store, host, p.hosts.Names())
	}
	if host == "" {
		var err error
		if host, err = p.Choose(); err != nil {
			return "", err
		}
	}
	b, _ := json.Marshal(placedValue{Host: host})
	rev, err := p.kv.Create(ctx, store, b)
	if errors.Is(err, jetstream.ErrKeyExists) {
		cur, _, gerr := p.Lookup(ctx, store)
		if gerr != nil {
			cur = "another host"
		}
		return "", &PlacedError{Store: store, Host: cur}
	}
	if err != nil {
		return "", fmt.Errorf("place store %s: %w", store, err)
	}
	p.noteLocal(store, host, rev)
	return host, nil
}

// Lookup reads store's placement from the cluster: its host and the entry's revision.
func (p *Placement) Lookup(ctx context.Context, store string) (string, uint64, error) {
	e, err := p.kv.Get(ctx, store)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", 0, fmt.Errorf("store %s: %w", store, ErrNotPlaced)
	}
	if err != nil {
		return "", 0, fmt.Errorf("where is store %s: %w", store, err)
	}
	var v placedValue
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		return "", 0, fmt.Errorf("where is store %s: its placement does not parse: %w", store, err)
	}
	return v.Host, e.Revision(), nil
}

// Move moves store's placement from host from to host to, if it is still on from.
func (p *Placement) Move(ctx context.Context, store, from, to string) error {
	cur, rev, err := p.Lookup(ctx, store)
	if err != nil {
		return err
	}
	if cur != from {
		return fmt.Errorf("move store %s from host %s: it is on host %s now", store, from, cur)
	}
	b, _ := json.Marshal(placedValue{Host: to})
	nrev, err := p.kv.Update(ctx, store, b, rev)
	if wrongRevision(err) {
		return fmt.Errorf("move store %s from host %s: another host moved it first", store, from)
	}
	if err != nil {
		return fmt.Errorf("move store %s to host %s: %w", store, to, err)
	}
	p.noteLocal(store, to, nrev)
	return nil
}

// Refresh reads store's placement from the cluster and takes it in here at once, before the watch brings it
// (a store another host just moved). It returns the store's host.
func (p *Placement) Refresh(ctx context.Context, store string) (string, error) {
	host, rev, err := p.Lookup(ctx, store)
	if err != nil {
		return "", err
	}
	p.noteLocal(store, host, rev)
	return host, nil
}

// Remove forgets store's placement (the store was removed).
func (p *Placement) Remove(ctx context.Context, store string) error {
	if err := p.kv.Delete(ctx, store); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("remove the placement of store %s: %w", store, err)
	}
	p.mu.Lock()
	delete(p.byStore, store)
	p.mu.Unlock()
	return nil
}

// noteLocal takes a placement this host wrote at revision rev in at once, before the watch brings it.
func (p *Placement) noteLocal(store, host string, rev uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.byStore[store]; !ok || s.rev < rev {
		p.byStore[store] = placedSeen{host: host, rev: rev}
	}
}

// placementQuiet is how long the placement's watch may deliver nothing before it is started again: a bucket
// can be quiet for long, and a stalled watch (its stream changed leader) is not told apart from a quiet one,
// so it is renewed this often (each renewal delivers every current entry again).
const placementQuiet = 30 * time.Second

// Run follows the placement bucket until ctx ends.
func (p *Placement) Run(ctx context.Context) {
	watchBucket(ctx, p.kv, placementQuiet, p.note, p.log)
}

// note takes entry e of the placement bucket in.
func (p *Placement) note(e jetstream.KeyValueEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.byStore[e.Key()]; ok && s.rev >= e.Revision() {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(p.byStore, e.Key())
		return
	}
	var v placedValue
	if json.Unmarshal(e.Value(), &v) != nil {
		return
	}
	p.byStore[e.Key()] = placedSeen{host: v.Host, rev: e.Revision()}
}
