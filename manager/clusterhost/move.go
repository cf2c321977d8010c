package clusterhost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/cluster"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// A store moves from one host to another (SPEC §19 "Move and failover"): `store move S --to H` on any host
// asks S's host, which drains S (new ensures wait for the move, then go to H), stops its browser cleanly
// (Browser.close and the snapshot of a clean stop), waits for its login's copies to reach the cluster, moves
// its placement to H and gives its lease back, so that H takes it at the next call without waiting for a
// lapse; H's launch fetches the cluster's newest login.

// Bounds of a move on the store's host.
const (
	moveStopBound   = 30 * time.Second // the browser's clean stop, its snapshot included
	moveCopiesBound = 2 * time.Minute  // its login's copies to the cluster
	// moveBound bounds the whole move, and so an ensure's wait for it.
	moveBound = moveStopBound + moveCopiesBound + 15*time.Second
	// movedToldBound bounds telling the new host (its event).
	movedToldBound = 3 * time.Second
)

// The questions of a move: the store's host is asked to move it; the new host is told it arrived.
const (
	askMove  = "move"
	askMoved = "moved"
)

// moveQuestion asks a store's host to move it to host To.
type moveQuestion struct {
	Store string `json:"store"`
	To    string `json:"to"`
}

// moving is a move in progress on this host: its store's ensures wait for done.
type moving struct {
	to   string
	done chan struct{}
}

// MoveStore moves s to host to, from any host: the store's host does it (asked over NATS unless it is this
// one). Refused, with the rule named, for a host that is unknown, not alive, or the one s is on already.
func (ch *Host) MoveStore(ctx context.Context, s state.Store, to string) (api.StoreMoved, error) {
	if err := ch.movable(ctx, s, to); err != nil {
		return api.StoreMoved{}, err
	}
	from, _, err := ch.placement.Lookup(ctx, s.ID)
	switch {
	case errors.Is(err, cluster.ErrNotPlaced):
		// Placed nowhere yet (no browser ran anywhere): placing it is the move.
		if _, err := ch.placement.Place(ctx, s.ID, to); err != nil {
			return api.StoreMoved{}, fmt.Errorf("%w: %v", errdefs.ErrConflict, err)
		}
		out := api.StoreMoved{Store: s.ID, Name: s.Name, To: to}
		ch.noteMoved(out)
		return out, nil
	case err != nil:
		return api.StoreMoved{}, fmt.Errorf("%w: %v", errdefs.ErrUnavailable, err)
	case from == to:
		return api.StoreMoved{}, fmt.Errorf("%w: store %s is on host %s already: store move %s --to HOST names "+
			"another host (the cluster's: %s)", errdefs.ErrConflict, s.Name, to, s.Slug, ch.hosts.Names())
	case from == ch.host:
		return ch.moveHere(ctx, s.ID, to)
	}
	var out api.StoreMoved
	if err := ch.conn.Ask(ctx, from, askMove, moveQuestion{Store: s.ID, To: to}, &out); err != nil {
		var refused *cluster.RefusedError
		if errors.As(err, &refused) {
			return api.StoreMoved{}, fmt.Errorf("%w: %v", errdefs.ErrConflict, err)
		}
		return api.StoreMoved{}, fmt.Errorf("%w: store %s runs on host %s, which did not move it: %v (a host that "+
			"stays dead loses its stores to the living ones within the lease TTL)", errdefs.ErrUnavailable, s.Name, from, err)
	}
	if _, err := ch.placement.Refresh(ctx, s.ID); err != nil {
		ch.log.Debug().Err(err).Str("store", s.ID).Msg("a moved store's placement is not read yet")
	}
	return out, nil
}

// movable refuses a move of s to host to that the rules forbid: a host named, known to the cluster and alive.
func (ch *Host) movable(ctx context.Context, s state.Store, to string) error {
	switch {
	case to == "":
		return fmt.Errorf("%w: store move %s --to HOST names the host it moves to (the cluster's: %s)",
			errdefs.ErrInvalid, s.Slug, ch.hosts.Names())
	case !ch.hosts.Exists(ctx, to):
		return fmt.Errorf("%w: no host %s in the cluster: store move %s --to HOST names one of its hosts (%s)",
			errdefs.ErrNotFound, to, s.Slug, ch.hosts.Names())
	case !ch.hosts.Alive(to):
		return fmt.Errorf("%w: host %s is not alive (no heartbeat within the lease TTL): a store moves to a live host "+
			"(the cluster's: %s; vibe-browser status shows which are alive)", errdefs.ErrConflict, to, ch.hosts.Names())
	}
	return nil
}

// answerMove is this host's answer to another host's question to move one of its stores.
func (ch *Host) answerMove(ctx context.Context, q []byte) (any, error) {
	var mq moveQuestion
	if err := json.Unmarshal(q, &mq); err != nil {
		return nil, err
	}
	return ch.moveHere(ctx, mq.Store, mq.To)
}

// moveHere moves store id, placed on this host, to host to.
func (ch *Host) moveHere(ctx context.Context, id, to string) (api.StoreMoved, error) {
	began := time.Now()
	s, err := ch.db.GetStore(ctx, id)
	if err != nil {
		return api.StoreMoved{}, err
	}
	if to == ch.host {
		return api.StoreMoved{}, fmt.Errorf("%w: store %s is on host %s already: store move %s --to HOST names "+
			"another host (the cluster's: %s)", errdefs.ErrConflict, s.Name, to, s.Slug, ch.hosts.Names())
	}
	if err := ch.movable(ctx, s, to); err != nil {
		return api.StoreMoved{}, err
	}
	done, err := ch.beginMove(s, to)
	if err != nil {
		return api.StoreMoved{}, err
	}
	defer done()
	ctx, cancel := context.WithTimeout(ctx, moveBound)
	defer cancel()
	out := api.StoreMoved{Store: s.ID, Name: s.Name, From: ch.host, To: to, Stopped: ch.runs(s.ID)}
	stopCtx, stopCancel := context.WithTimeout(ctx, moveStopBound)
	err = ch.fleet.Stop(stopCtx, s.ID)
	stopCancel()
	if err != nil {
		return api.StoreMoved{}, fmt.Errorf("%w: store %s's browser did not stop for the move: %v; the store stays on host %s",
			errdefs.ErrUnavailable, s.Name, err, ch.host)
	}
	copyCtx, copyCancel := context.WithTimeout(ctx, moveCopiesBound)
	err = ch.fleet.AwaitLoginCopies(copyCtx, s.ID)
	copyCancel()
	if err != nil {
		return api.StoreMoved{}, fmt.Errorf("%w: store %s's login is not on the cluster: %v; the store stays on host %s "+
			"(its browser starts again here at the next call)", errdefs.ErrUnavailable, s.Name, err, ch.host)
	}
	if err := ch.placement.Move(ctx, s.ID, ch.host, to); err != nil {
		return api.StoreMoved{}, fmt.Errorf("%w: %v", errdefs.ErrConflict, err)
	}
	ch.released(ctx, s.ID)
	out.CheckpointAt, out.SnapshotAt = ch.fleet.Snapshots().LoginTimes(s.Slug)
	out.TookMs = time.Since(began).Milliseconds()
	ch.noteMoved(out)
	tell, tellCancel := context.WithTimeout(context.WithoutCancel(ctx), movedToldBound)
	defer tellCancel()
	if err := ch.conn.Ask(tell, to, askMoved, out, &struct{}{}); err != nil {
		ch.log.Warn().Err(err).Str("store", s.ID).Str("to", to).Msg("the new host of a moved store was not told")
	}
	return out, nil
}

// answerMoved notes a store moved to this host.
func (ch *Host) answerMoved(_ context.Context, q []byte) (any, error) {
	var out api.StoreMoved
	if err := json.Unmarshal(q, &out); err != nil {
		return nil, err
	}
	ch.noteMoved(out)
	return struct{}{}, nil
}

// runs reports whether store's browser runs here.
func (ch *Host) runs(store string) bool {
	for _, in := range ch.fleet.Running() {
		if in.Spec().Key == store {
			return true
		}
	}
	return false
}

// beginMove marks s moving to host to; done ends the mark and lets its waiting ensures go on.
func (ch *Host) beginMove(s state.Store, to string) (done func(), err error) {
	ch.movesMu.Lock()
	defer ch.movesMu.Unlock()
	if m, ok := ch.moves[s.ID]; ok {
		return nil, fmt.Errorf("%w: store %s is moving to host %s already", errdefs.ErrConflict, s.Name, m.to)
	}
	m := &moving{to: to, done: make(chan struct{})}
	ch.moves[s.ID] = m
	return func() {
		ch.movesMu.Lock()
		delete(ch.moves, s.ID)
		ch.movesMu.Unlock()
		close(m.done)
	}, nil
}

// movingTo is the host store moves to from this host now, "" when it does not move.
func (ch *Host) movingTo(store string) string {
	ch.movesMu.Lock()
	defer ch.movesMu.Unlock()
	if m, ok := ch.moves[store]; ok {
		return m.to
	}
	return ""
}

// AwaitMove waits while store moves away from this host (moveBound at most): an ensure that waited then finds
// the store on its new host (Elsewhere).
func (ch *Host) AwaitMove(ctx context.Context, store string) error {
	ch.movesMu.Lock()
	m, ok := ch.moves[store]
	ch.movesMu.Unlock()
	if !ok {
		return nil
	}
	wait := time.NewTimer(moveBound)
	defer wait.Stop()
	select {
	case <-m.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: store %s is moving to host %s: %v", errdefs.ErrUnavailable, store, m.to, ctx.Err())
	case <-wait.C:
		return fmt.Errorf("%w: store %s is moving to host %s for longer than %s", errdefs.ErrUnavailable, store, m.to, moveBound)
	}
}

// noteMoved records the event of a move, on either of its hosts.
func (ch *Host) noteMoved(out api.StoreMoved) {
	if ch.note == nil {
		return
	}
	msg := fmt.Sprintf("store %s moved to host %s", out.Name, out.To)
	if out.From != "" {
		msg = fmt.Sprintf("store %s moved from host %s to host %s in %s", out.Name, out.From, out.To,
			(time.Duration(out.TookMs) * time.Millisecond).Round(time.Millisecond))
	}
	msg += "; its login: " + LoginAges(out, time.Now())
	ch.note(zerolog.InfoLevel, api.EventStoreMoved, out.Store, api.Event{Message: msg})
}

// LoginAges says how old the login state a moved store carries is.
func LoginAges(out api.StoreMoved, now time.Time) string {
	age := func(what string, at time.Time) string {
		if at.IsZero() {
			return "no " + what
		}
		return fmt.Sprintf("%s %s old", what, now.Sub(at).Round(time.Second))
	}
	return age("snapshot", out.SnapshotAt) + ", " + age("checkpoint", out.CheckpointAt)
}

// refuseMoving is MayRun's refusal of a launch of a store that moves away from this host now.
func (ch *Host) refuseMoving(sp browsers.Spec) error {
	if to := ch.movingTo(sp.Key); to != "" {
		return fmt.Errorf("%w: %s is moving to host %s; call again once it moved", errdefs.ErrUnavailable, sp.Name, to)
	}
	return nil
}
