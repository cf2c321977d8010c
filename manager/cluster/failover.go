package cluster

import (
	"context"
	"time"
)

// A host that stops beating loses its stores (SPEC §19 "Move and failover"): every live host looks at the
// placement each failoverEvery and moves each store of a dead host to the host the rule chooses among the
// living. All of them may try; the compare-and-set lets one move win. The new host then takes the store's
// lease once it lapses (leases.go) and launches the browser from the store's newest login.

// failoverEvery is how often a host looks for the stores of dead hosts.
const failoverEvery = time.Second

// RunFailover moves the stores of dead hosts until ctx ends. self is this host: it moves nothing while it is
// not alive itself (its own heartbeat is not getting through, so its view of the others is no better).
func (p *Placement) RunFailover(ctx context.Context, self string) {
	Every(ctx, failoverEvery, func(ctx context.Context) {
		if p.hosts.Alive(self) {
			p.failover(ctx)
		}
	})
}

// failover moves each store placed on a dead host once, and reports the moves it made.
func (p *Placement) failover(ctx context.Context) (moved map[string]string) {
	p.mu.Lock()
	orphans := map[string]string{} // store -> its dead host
	for store, s := range p.byStore {
		orphans[store] = s.host
	}
	p.mu.Unlock()
	for store, host := range orphans {
		if !p.hosts.Dead(host) {
			delete(orphans, store)
		}
	}
	moved = map[string]string{}
	for store, dead := range orphans {
		to, err := p.Choose(dead)
		if err != nil {
			p.log.Warn().Err(err).Str("store", store).Str("dead_host", dead).Msg("failover: the store waits for a live host")
			continue
		}
		if err := p.Move(ctx, store, dead, to); err != nil {
			p.log.Debug().Err(err).Str("store", store).Msg("failover")
			continue
		}
		p.log.Warn().Str("store", store).Str("from", dead).Str("to", to).Msg("failover: a dead host's store moves")
		moved[store] = to
	}
	return moved
}
