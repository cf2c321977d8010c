//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/seal"
	"vibebrowser/manager/snapshot"
)

// storageSite is a marketplace in small (loginSite's twin with a localStorage item): /set?v=V answers a login cookie (HttpOnly, as a login answer sets
// it) and its page stores a localStorage item; /check sets nothing and shows what the browser sends.
func storageSite(t *testing.T) *httptest.Server {
	t.Helper()
	mx := http.NewServeMux()
	mx.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		v := r.URL.Query().Get("v")
		http.SetCookie(w, &http.Cookie{Name: "login", Value: "cookie-" + v, Path: "/", MaxAge: 86400, HttpOnly: true})
		fmt.Fprintf(w, `<html><body><script>localStorage.setItem("item", "ls-%s")</script>set</body></html>`, v)
	})
	mx.HandleFunc("/check", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><body>check</body></html>`)
	})
	mx.HandleFunc("/cookie", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.Header.Get("Cookie"))
	})
	srv := httptest.NewServer(mx)
	t.Cleanup(srv.Close)
	return srv
}

// loginState is what the store's browser holds for the site: its localStorage item and the cookie it sends.
type loginState struct{ item, cookie string }

// visit opens url in slug's browser as a task's client, reads the site's state there, and closes its tab,
// so the next launch restores no tab that would set anything again.
func (m *managed) visit(slug, url string) loginState {
	m.t.Helper()
	if err := ensureStore(m, slug); err != nil {
		m.t.Fatal(err)
	}
	c := dialRaw(m.t, m.storeWS(slug, "snaptest"))
	defer c.ws.Close()
	target, session := c.createPage(url)
	var st loginState
	if v, err := c.evaluate(session, `localStorage.getItem("item")`); err == nil {
		json.Unmarshal(v, &st.item)
	}
	if v, err := c.evaluate(session, `fetch("/cookie").then(r => r.text())`); err == nil {
		json.Unmarshal(v, &st.cookie)
	}
	c.must("Target.closeTarget", map[string]any{"targetId": target}, "", nil)
	return st
}

// stopAndSnapshot stops slug's browser cleanly and waits for its stop's snapshot: the newest one after it.
func (m *managed) stopAndSnapshot(slug string) api.Snapshot {
	m.t.Helper()
	before, err := m.client.StoreSnapshots(context.Background(), slug)
	if err != nil {
		m.t.Fatal(err)
	}
	m.cli("browser", "stop", slug)
	var all []api.Snapshot
	testkit.WaitFor(m.t, 30*time.Second, "the stop's snapshot", func() bool {
		all, err = m.client.StoreSnapshots(context.Background(), slug)
		return err == nil && len(all) > 0 && (len(before) == 0 || all[0].ID != before[0].ID)
	})
	return all[0]
}

func (m *managed) eventOf(kind string) (api.Event, bool) {
	m.t.Helper()
	evs, err := m.client.Events(context.Background())
	if err != nil {
		m.t.Fatal(err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Kind == kind {
			return evs[i], true
		}
	}
	return api.Event{}, false
}

// TestSnapshotsRebuildTheProfile is SPEC §18's snapshots with real Chromium: sealed at each clean stop; a
// deleted profile folder, a Cookies file of garbage and a profile Chromium will not start on each come back
// with the site's localStorage and login; an old snapshot restored is the older state; a restore is refused
// while the browser runs.
func TestSnapshotsRebuildTheProfile(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	srv := storageSite(t)
	m.cli("store", "add", "snap")
	profile := filepath.Join(m.home, "profiles", "snap")
	want1 := loginState{item: "ls-v1", cookie: "login=cookie-v1"}
	want2 := loginState{item: "ls-v2", cookie: "login=cookie-v2"}

	if got := m.visit("snap", srv.URL+"/set?v=v1"); got != want1 {
		t.Fatalf("after /set?v=v1: %+v; want %+v", got, want1)
	}
	first := m.stopAndSnapshot("snap")

	t.Run("sealed", func(t *testing.T) {
		raw, err := os.ReadFile(first.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, clear := range []string{"SQLite format 3", "cookie-v1", "ls-v1", "ustar", "Local Storage", "Cookies"} {
			if bytes.Contains(raw, []byte(clear)) {
				t.Errorf("snapshot %s holds %q in the clear", first.ID, clear)
			}
		}
		if !bytes.HasPrefix(raw, []byte("vibe-sealed/1\n")) || bytes.HasPrefix(raw[30:], []byte{0x1f, 0x8b}) {
			t.Errorf("snapshot %s does not begin with the seal, or its archive begins in the clear", first.ID)
		}
		if fi, err := os.Stat(first.Path); err != nil || fi.Mode().Perm() != 0o600 || first.Kind != "full" {
			t.Errorf("snapshot %s: kind %s, mode %v, %v; want a full one, 0600", first.ID, first.Kind, fi.Mode().Perm(), err)
		}
		if fi, err := os.Stat(filepath.Dir(first.Path)); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("snapshot folder: mode %v, %v; want 0700", fi.Mode().Perm(), err)
		}
		show := m.cli("store", "show", "snap")
		var line string
		for _, l := range strings.Split(show, "\n") {
			if strings.HasPrefix(l, "snapshot ") {
				line = l
			}
		}
		if !strings.Contains(line, " ago (") {
			t.Errorf("store show's snapshot line = %q; want its age:\n%s", line, show)
		}
	})

	t.Run("profile folder deleted", func(t *testing.T) {
		if err := os.RemoveAll(profile); err != nil {
			t.Fatal(err)
		}
		if got := m.visit("snap", srv.URL+"/check"); got != want1 {
			t.Errorf("after the profile folder was deleted: %+v; want %+v back from snapshot %s", got, want1, first.ID)
		}
		if ev, ok := m.eventOf(api.EventProfileRebuilt); !ok || !strings.Contains(ev.Message, first.ID) {
			t.Errorf("%s event = %+v, %v; want one naming %s", api.EventProfileRebuilt, ev, ok, first.ID)
		}
		r := doctorCLI(t, m, nil)
		if line := r.line("login:snap"); !strings.HasPrefix(line, "WARN") || !strings.Contains(line, "lost and rebuilt") {
			t.Errorf("doctor's login:snap = %q; want a warning that the profile was rebuilt", line)
		}
	})

	if got := m.visit("snap", srv.URL+"/set?v=v2"); got != want2 {
		t.Fatalf("after /set?v=v2: %+v; want %+v", got, want2)
	}
	m.stopAndSnapshot("snap")

	t.Run("Cookies of garbage", func(t *testing.T) {
		garbage := bytes.Repeat([]byte("not a database "), 2000)
		if err := os.WriteFile(filepath.Join(profile, "Default", "Cookies"), garbage, 0o600); err != nil {
			t.Fatal(err)
		}
		got := m.visit("snap", srv.URL+"/check")
		if got.item != want2.item {
			t.Errorf("after Cookies was overwritten: localStorage %q; want %q intact", got.item, want2.item)
		}
		// Chromium razes the unreadable database: the cookie comes back from the newest checkpoint at launch
		// (SPEC §18's checkpoints), not from the snapshot.
		t.Logf("cookie after Chromium razed its Cookies database: %q", got.cookie)
		m.stopAndSnapshot("snap")
	})

	t.Run("profile Chromium will not start on", func(t *testing.T) {
		// A SingletonLock that is a folder with something in it: Chromium exits at start on it ("Failed to
		// create a ProcessSingleton for your profile directory", status 21), and the launcher cannot clear it.
		if err := os.MkdirAll(filepath.Join(profile, "SingletonLock", "stuck"), 0o700); err != nil {
			t.Fatal(err)
		}
		got := m.visit("snap", srv.URL+"/check")
		if got.item != want2.item {
			t.Errorf("after the retry in a rebuilt profile: localStorage %q; want %q", got.item, want2.item)
		}
		broken, _ := filepath.Glob(profile + ".broken-*")
		if len(broken) != 1 || !fileThere(filepath.Join(broken[0], "SingletonLock", "stuck")) {
			t.Fatalf("kept aside: %v; want the refused profile as profiles/snap.broken-<time>", broken)
		}
		if ev, ok := m.eventOf(api.EventProfileBroken); !ok || !strings.Contains(ev.Message, broken[0]) {
			t.Errorf("%s event = %+v, %v; want one naming %s", api.EventProfileBroken, ev, ok, broken[0])
		}
		r := doctorCLI(t, m, nil)
		if line := r.line("login:snap"); !strings.HasPrefix(line, "WARN") || !strings.Contains(line, broken[0]) {
			t.Errorf("doctor's login:snap = %q; want it to name %s", line, broken[0])
		}
	})

	t.Run("restore refused while running", func(t *testing.T) {
		out, err := m.cliErr("store", "restore", "snap", "--snapshot", first.ID)
		if err == nil || !strings.Contains(out, "vibe-browser browser stop snap") {
			t.Errorf("store restore while running = %v: %s; want refused naming vibe-browser browser stop snap", err, out)
		}
	})

	t.Run("old snapshot restored", func(t *testing.T) {
		m.stopAndSnapshot("snap")
		var all []api.Snapshot
		if err := json.Unmarshal([]byte(m.cli("store", "snapshots", "snap", "--json")), &all); err != nil {
			t.Fatal(err)
		}
		if len(all) != 4 || all[len(all)-1].ID != first.ID {
			t.Fatalf("store snapshots = %+v; want 4, the oldest %s", all, first.ID)
		}
		list := m.cli("store", "snapshots", "snap")
		if !strings.Contains(list, first.ID) || !strings.Contains(list, "full") {
			t.Errorf("store snapshots:\n%s\nwant %s listed", list, first.ID)
		}
		out := m.cli("store", "restore", "snap", "--snapshot", first.ID)
		if !strings.Contains(out, first.ID) {
			t.Errorf("store restore printed %q; want the snapshot's ID", out)
		}
		if got := m.visit("snap", srv.URL+"/check"); got != want1 {
			t.Errorf("after restoring %s: %+v; want its older state %+v", first.ID, got, want1)
		}
		if _, ok := m.eventOf(api.EventProfileRestored); !ok {
			t.Errorf("no %s event", api.EventProfileRestored)
		}
		// Restoring takes nothing from the list; the stop after it adds one.
		m.stopAndSnapshot("snap")
		all, _ = m.client.StoreSnapshots(context.Background(), "snap")
		if len(all) != 5 || !slices.ContainsFunc(all, func(s api.Snapshot) bool { return s.ID == first.ID }) {
			t.Errorf("after one more stop: %+v; want 5 (VIBE_SNAPSHOT_KEEP), %s among them", all, first.ID)
		}
	})
}

func fileThere(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// ownedBy fails t unless path is uid's with mode perm.
func ownedBy(t *testing.T, path string, uid int, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || fi.Mode().Perm() != perm {
		t.Errorf("%s: uid %d, mode %v; want uid %d, %v", path, st.Uid, fi.Mode().Perm(), uid, perm)
	}
}

// TestSnapshotsKeepTheBrowserUsers: a store whose browser runs as its browser user (SPEC §14) gets its profile
// back from a snapshot as that user's, 0700 folders and 0600 files, and a restore gives the checkpoint the
// snapshot holds to that user too.
func TestSnapshotsKeepTheBrowserUsers(t *testing.T) {
	t.Parallel()
	u := testkit.SystemUser(t, browserUserB)
	m := startManagerWith(t, reachableBinaries(t), boundaryHome(t))
	srv := storageSite(t)
	m.cli("store", "add", "owned", "--browser-user", browserUserB)
	profile := filepath.Join(m.home, "profiles", "owned")
	want := loginState{item: "ls-u1", cookie: "login=cookie-u1"}
	if got := m.visit("owned", srv.URL+"/set?v=u1"); got != want {
		t.Fatalf("after /set?v=u1: %+v; want %+v", got, want)
	}
	m.stopAndSnapshot("owned")
	if err := os.RemoveAll(profile); err != nil {
		t.Fatal(err)
	}
	if got := m.visit("owned", srv.URL+"/check"); got != want {
		t.Errorf("after the profile folder was deleted: %+v; want %+v", got, want)
	}
	ownedBy(t, profile, u.UID, 0o700)
	ownedBy(t, filepath.Join(profile, "Default", "Local Storage"), u.UID, 0o700)
	ownedBy(t, filepath.Join(profile, "Default", "Cookies"), u.UID, 0o600)
	m.stopAndSnapshot("owned")

	// A checkpoint, as the checkpoint code writes it, carried by a snapshot taken while stopped and restored.
	key, err := seal.LoadKey(m.home, "")
	if err != nil {
		t.Fatal(err)
	}
	jar := filepath.Join(m.home, "logins", "owned", "jar")
	os.MkdirAll(filepath.Dir(jar), 0o700)
	if err := os.WriteFile(jar, key.Seal([]byte("opaque jar"), "jar:owned"), 0o600); err != nil {
		t.Fatal(err)
	}
	var snap api.Snapshot
	json.Unmarshal([]byte(m.cli("store", "snapshot", "owned", "--json")), &snap)
	if snap.Kind != "full" {
		t.Errorf("store snapshot of a stopped browser = %+v; want a full one", snap)
	}
	os.Remove(jar)
	m.cli("store", "restore", "owned", "--snapshot", snap.ID)
	ownedBy(t, profile, u.UID, 0o700)
	ownedBy(t, filepath.Join(profile, "Default", "Cookies"), u.UID, 0o600)
	ownedBy(t, jar, u.UID, 0o600)
	if b, err := os.ReadFile(jar); err != nil {
		t.Error(err)
	} else if plain, err := key.Open(b, "jar:owned"); err != nil || string(plain) != "opaque jar" {
		t.Errorf("restored checkpoint opens to %q, %v; want the snapshot's", plain, err)
	}
}

// refusingChrome is Chromium behind a script that exits at start, as Chromium does on a profile it refuses
// (status 21, its ProcessSingleton message), when the profile holds a file named REFUSED.
func refusingChrome(t *testing.T) string {
	t.Helper()
	script := fmt.Sprintf(`#!/bin/bash
for a in "$@"; do
  case "$a" in
    --user-data-dir=*) if [ -e "${a#--user-data-dir=}/REFUSED" ]; then
        echo "Failed to create a ProcessSingleton for your profile directory. Aborting now to avoid profile corruption." >&2
        exit 21
      fi;;
  esac
done
exec %s "$@"
`, chromiumBinary(t))
	p := filepath.Join(t.TempDir(), "chrome")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestBrokenProfileChromiumExitsAtStart: Chromium exiting at start on the profile, through its keeper, is
// retried once in a profile rebuilt from the newest snapshot, the refused one kept aside.
func TestBrokenProfileChromiumExitsAtStart(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_CHROME="+refusingChrome(t))
	srv := storageSite(t)
	m.cli("store", "add", "refused")
	profile := filepath.Join(m.home, "profiles", "refused")
	want := loginState{item: "ls-r1", cookie: "login=cookie-r1"}
	if got := m.visit("refused", srv.URL+"/set?v=r1"); got != want {
		t.Fatalf("after /set?v=r1: %+v; want %+v", got, want)
	}
	snap := m.stopAndSnapshot("refused")
	if err := os.WriteFile(filepath.Join(profile, "REFUSED"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := m.visit("refused", srv.URL+"/check"); got != want {
		t.Errorf("after Chromium refused the profile: %+v; want %+v from snapshot %s", got, want, snap.ID)
	}
	broken, _ := filepath.Glob(profile + ".broken-*")
	if len(broken) != 1 || !fileThere(filepath.Join(broken[0], "REFUSED")) {
		t.Fatalf("kept aside: %v; want the refused profile as profiles/refused.broken-<time>", broken)
	}
	ev, ok := m.eventOf(api.EventProfileBroken)
	if !ok || !strings.Contains(ev.Message, broken[0]) || !strings.Contains(ev.Message, "exit status 21") {
		t.Errorf("%s event = %+v, %v; want one naming %s and Chromium's exit", api.EventProfileBroken, ev, ok, broken[0])
	}
}

// TestEveryCleanStopSnapshots: the idle sweep's stop and the manager's own stop (the quit barrier) each leave
// a snapshot, as browser stop does; the barrier waits for it before the manager exits.
func TestEveryCleanStopSnapshots(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=2")
	srv := storageSite(t)
	m.cli("store", "add", "sleepy")
	m.cli("store", "add", "busy")
	m.visit("sleepy", srv.URL+"/set?v=s1")
	testkit.WaitFor(t, 30*time.Second, "the idle sweep's snapshot of sleepy", func() bool {
		all, err := m.client.StoreSnapshots(context.Background(), "sleepy")
		return err == nil && len(all) == 1
	})
	m.cli("task", "set", taskA, "--store", "busy", "--status", "running") // held: the sweep leaves it running
	m.visit("busy", srv.URL+"/set?v=b1")
	if err := m.stop(); err != nil {
		t.Fatalf("manager exit: %v", err)
	}
	all, err := snapshot.List(filepath.Join(m.home, "snapshots"), "busy")
	if err != nil || len(all) != 1 || all[0].Kind != snapshot.Full {
		t.Errorf("busy's snapshots after the manager stopped = %+v, %v; want the quit barrier's full one", all, err)
	}
}
