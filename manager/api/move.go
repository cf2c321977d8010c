package api

import (
	"context"
	"time"
)

// SPEC §19 "Move and failover": a store moved to another host of a cluster.
const (
	PathStoreMove = "/v1/stores/{ref}/move" // POST MoveRequest: move the store to another host; answers StoreMoved
)

// MoveRequest names the host a store moves to.
type MoveRequest struct {
	To string `json:"to"`
}

// StoreMoved is a move done: where the store went and the login state it carries there.
type StoreMoved struct {
	Store string `json:"store"` // its id
	Name  string `json:"name"`
	From  string `json:"from"` // the host it left
	To    string `json:"to"`   // the host it is placed on now: its browser launches there at the next call
	// SnapshotAt is when the snapshot its browser's clean stop took was taken, CheckpointAt when its newest
	// cookie checkpoint was written (zero: none); both are on the cluster, and the new host launches from them.
	SnapshotAt   time.Time `json:"snapshot_at,omitzero"`
	CheckpointAt time.Time `json:"checkpoint_at,omitzero"`
	// Stopped reports whether its browser was running on From and was stopped for the move.
	Stopped bool  `json:"stopped"`
	TookMs  int64 `json:"took_ms"` // the move's time on From: drain, stop, copies, placement and lease
}

// MoveStore moves the store named by ref to host to (a cluster's).
func (c *Client) MoveStore(ctx context.Context, ref, to string) (StoreMoved, error) {
	var out StoreMoved
	err := c.Do(ctx, MethodPost, storePath(ref)+"/move", MoveRequest{To: to}, &out)
	return out, err
}
