package doctor

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"vibebrowser/manager/snapshot"
	"vibebrowser/state"
)

func TestLoginSaysAgesAndRebuilds(t *testing.T) {
	m := machineWith(t, map[string]string{})
	home := m.cfg.Home
	now := time.Now()
	wantCheck(t, m.login("shop", "shop", now), OK, "has not run yet")

	profile := filepath.Join(home, "profiles", "shop")
	os.MkdirAll(profile, 0o700)
	wantCheck(t, m.login("shop", "shop", now), Warn, "no snapshot yet", "vibe-browser store snapshot shop")

	os.MkdirAll(filepath.Join(home, "logins", "shop"), 0o700)
	os.WriteFile(filepath.Join(home, "logins", "shop", "jar"), []byte("sealed"), 0o600)
	dir := filepath.Join(m.cfg.SnapshotDir, "shop")
	os.MkdirAll(dir, 0o700)
	os.WriteFile(filepath.Join(dir, "20261205T010000.000000Z-full.snap"), []byte("sealed"), 0o600)
	wantCheck(t, m.login("shop", "shop", now), OK, "checkpoint", "snapshot", "20261205T010000.000000Z-full")

	st := &snapshot.Store{Dir: m.cfg.SnapshotDir}
	st.NoteRebuild("shop", snapshot.Rebuild{At: now.Add(-time.Hour), Why: snapshot.WhyLost, Snapshot: "20261205T010000.000000Z-full"})
	wantCheck(t, m.login("shop", "shop", now), Warn, "lost and rebuilt from snapshot 20261205T010000.000000Z-full")

	broken := profile + ".broken-20261205T020000Z"
	os.MkdirAll(broken, 0o700)
	wantCheck(t, m.login("shop", "shop", now), Warn, "kept aside as "+broken, "rm -rf")

	m.stores = []state.Store{{Slug: "shop", Backend: state.BackendChrome}, {Slug: "zed", Backend: state.BackendZiniao}}
	if got := m.logins(); len(got) != 1 || got[0].Name != "login:shop" {
		t.Errorf("logins() = %+v; want login:shop only (a ziniao profile is not the manager's)", got)
	}
}
