package snapshot

import (
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"vibebrowser/mux/sys/atomicfile"
)

// Why a profile was made from a snapshot.
const (
	WhyLost     = "lost"     // its folder was missing or empty at a launch
	WhyBroken   = "broken"   // Chromium would not start on it; it was kept aside
	WhyRestored = "restored" // a person asked (vibe-browser store restore)
)

// Rebuild is the last time a store's profile was made from a snapshot, kept beside its snapshots for doctor.
type Rebuild struct {
	At       time.Time `json:"at"`
	Why      string    `json:"why"`
	Snapshot string    `json:"snapshot"`          // its ID
	KeptAs   string    `json:"kept_as,omitempty"` // the profile Chromium refused, kept aside (WhyBroken)
}

const rebuildFile = "rebuilt.json"

// NoteRebuild records r as slug's last rebuild.
func (st *Store) NoteRebuild(slug string, r Rebuild) error {
	dir, err := slugDir(st.Dir, slug)
	if err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, rebuildFile), b, 0o600)
}

// LastRebuild is slug's last rebuild under dir; false when there was none.
func LastRebuild(dir, slug string) (Rebuild, bool) {
	d, err := slugDir(dir, slug)
	if err != nil {
		return Rebuild{}, false
	}
	b, err := os.ReadFile(filepath.Join(d, rebuildFile))
	if err != nil || len(b) > 64<<10 {
		return Rebuild{}, false
	}
	var r Rebuild
	if json.Unmarshal(b, &r) != nil {
		return Rebuild{}, false
	}
	return r, true
}
