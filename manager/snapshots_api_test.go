package manager_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"vibebrowser/manager/api"
)

// The snapshot routes' answers without a browser: what they refuse, and a stopped store's snapshot taken and
// restored through the API.
func TestSnapshotsAPI(t *testing.T) {
	d := startDaemon(t, nil, true)
	c := d.client
	s, err := c.CreateStore(bg, api.StoreSpec{Name: "Acme"})
	if err != nil {
		t.Fatal(err)
	}
	if all, err := c.StoreSnapshots(bg, s.Slug); err != nil || len(all) != 0 {
		t.Errorf("StoreSnapshots of a new store = %v, %v; want none", all, err)
	}
	_, err = c.RestoreSnapshot(bg, s.Slug, "")
	wantAPIError(t, err, http.StatusNotFound, "has no snapshot")
	_, err = c.TakeSnapshot(bg, s.Slug)
	wantAPIError(t, err, http.StatusConflict, "holds nothing a snapshot keeps")

	// A profile as a stopped Chromium leaves it.
	profile := filepath.Join(d.home, "profiles", s.Slug)
	os.MkdirAll(filepath.Join(profile, "Default"), 0o700)
	os.WriteFile(filepath.Join(profile, "Local State"), []byte(`{"marker":1}`), 0o600)
	snap, err := c.TakeSnapshot(bg, s.Slug)
	if err != nil || snap.Kind != "full" {
		t.Fatalf("TakeSnapshot = %+v, %v; want a full one", snap, err)
	}
	if got, err := c.GetStore(bg, s.Slug); err != nil || !got.SnapshotAt.Equal(snap.At) || !got.CheckpointAt.IsZero() {
		t.Errorf("store's snapshot_at %v, checkpoint_at %v; want %v and none", got.SnapshotAt, got.CheckpointAt, snap.At)
	}
	os.WriteFile(filepath.Join(profile, "Local State"), []byte(`{"marker":2}`), 0o600)
	r, err := c.RestoreSnapshot(bg, s.Slug, snap.ID[:10])
	if err != nil || r.Snapshot.ID != snap.ID || r.Files != 1 || r.Checkpoint {
		t.Fatalf("RestoreSnapshot(prefix) = %+v, %v; want %s, 1 file, no checkpoint", r, err, snap.ID)
	}
	if b, _ := os.ReadFile(filepath.Join(profile, "Local State")); string(b) != `{"marker":1}` {
		t.Errorf("Local State after restore = %s; want the snapshot's", b)
	}
	_, err = c.RestoreSnapshot(bg, s.Slug, "1999")
	wantAPIError(t, err, http.StatusNotFound, "no snapshot \"1999\"")

	cdp, err := c.CreateStore(bg, api.StoreSpec{Name: "Remote", Backend: "cdp", StoreSettings: api.StoreSettings{CDPURL: "http://127.0.0.1:9"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.TakeSnapshot(bg, cdp.Slug)
	wantAPIError(t, err, http.StatusBadRequest, "snapshots are of chrome stores")
	_, err = c.StoreSnapshots(bg, "nope")
	wantAPIError(t, err, http.StatusNotFound, "no store named")
}
