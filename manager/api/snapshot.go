package api

import (
	"context"
	"time"
)

// SPEC §18's snapshots of a store's profile.
const (
	PathStoreSnapshots = "/v1/stores/{ref}/snapshots" // GET: the store's snapshots, newest first; POST: take one now
	PathStoreRestore   = "/v1/stores/{ref}/restore"   // POST RestoreRequest: replace the stopped browser's profile and checkpoint
)

// Snapshot is one sealed snapshot of a store's profile.
type Snapshot struct {
	ID   string    `json:"id"`   // its file's name without .snap: when it was taken (UTC) and its kind
	At   time.Time `json:"at"`   // when it was taken
	Kind string    `json:"kind"` // full (a stopped browser's) or live (a running one's: its checkpoint and settings files)
	Size int64     `json:"size"` // bytes on disk, sealed
	Path string    `json:"path"`
}

// RestoreRequest names the snapshot to restore: its ID or a prefix of one; "" is the newest.
type RestoreRequest struct {
	Snapshot string `json:"snapshot,omitempty"`
}

// Restored is what a restore put in place.
type Restored struct {
	Snapshot   Snapshot `json:"snapshot"`
	Files      int      `json:"files"`      // profile files written
	Checkpoint bool     `json:"checkpoint"` // the snapshot held a cookie checkpoint, now the store's; false: the store has none now
	Profile    string   `json:"profile"`    // the profile folder replaced
}

// StoreSnapshots lists the snapshots of the store named by ref (or WebSlug), newest first.
func (c *Client) StoreSnapshots(ctx context.Context, ref string) ([]Snapshot, error) {
	var out []Snapshot
	err := c.Do(ctx, MethodGet, storePath(ref)+"/snapshots", nil, &out)
	return out, err
}

// TakeSnapshot snapshots the store's profile now.
func (c *Client) TakeSnapshot(ctx context.Context, ref string) (Snapshot, error) {
	var out Snapshot
	err := c.Do(ctx, MethodPost, storePath(ref)+"/snapshots", nil, &out)
	return out, err
}

// RestoreSnapshot replaces the store's profile and checkpoint with snapshot id's ("" = the newest); its
// browser must be stopped.
func (c *Client) RestoreSnapshot(ctx context.Context, ref, id string) (Restored, error) {
	var out Restored
	err := c.Do(ctx, MethodPost, storePath(ref)+"/restore", RestoreRequest{Snapshot: id}, &out)
	return out, err
}
