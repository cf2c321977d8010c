package browsers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/snapshot"
	"vibebrowser/mux/errdefs"
)

// These tests drive SPEC §18's snapshots through the fake backend: the profile is a folder of files the test
// writes as Chromium would, the launch a fake that may refuse it.

// writeFakeProfile writes a profile's kept files, with marker as its Local Storage's content.
func writeFakeProfile(t *testing.T, dir, marker string) {
	t.Helper()
	files := map[string]string{
		"Local State":         `{}`,
		"Default/Preferences": `{}`,
		"Default/Cookies":     "SQLite format 3\x00" + marker,
		"Default/Local Storage/leveldb/000003.log": marker,
	}
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func localStorageOf(t *testing.T, profile string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(profile, "Default", "Local Storage", "leveldb", "000003.log"))
	return string(b)
}

// runAndStop starts sp's browser on a profile holding marker, then stops it cleanly, and waits for its
// stop's snapshot.
func runAndStop(t *testing.T, f *Fleet, sp Spec, marker string) snapshot.Info {
	t.Helper()
	ctx := context.Background()
	if _, err := f.Ensure(ctx, sp); err != nil {
		t.Fatal(err)
	}
	writeFakeProfile(t, f.snaps.profileDir(sp), marker)
	if err := f.snaps.writeJar(sp.Slug, []byte("jar of "+marker), nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Stop(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	f.snaps.wg.Wait()
	all, err := f.Snapshots().List(sp)
	if err != nil || len(all) == 0 {
		t.Fatalf("Snapshots after a clean stop = %v, %v; want one", all, err)
	}
	return all[0]
}

func TestCleanStopTakesASnapshot(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	info := runAndStop(t, f, sp, "first")
	if info.Kind != snapshot.Full {
		t.Errorf("stop's snapshot kind = %s; want full", info.Kind)
	}
	if fi, err := os.Stat(info.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("snapshot file %s: %v, %v; want 0600", info.Path, fi.Mode().Perm(), err)
	}
	if _, snap := f.Snapshots().LoginTimes(sp.Slug); !snap.Equal(info.At) {
		t.Errorf("LoginTimes snapshot = %v; want %v", snap, info.At)
	}

	// A browser that dies on its own is buried: no snapshot of a crashed profile.
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	fb.last().die(false)
	testkit.WaitFor(t, 10*time.Second, "the dead browser buried", func() bool { return f.slot(sp.Key).cur.Load() == nil })
	f.snaps.wg.Wait()
	if all, _ := f.Snapshots().List(sp); len(all) != 1 {
		t.Errorf("snapshots after a death = %d; want still 1", len(all))
	}
}

func TestLostProfileRebuiltAtLaunch(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	info := runAndStop(t, f, sp, "kept")
	if err := os.RemoveAll(f.snaps.profileDir(sp)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if got := localStorageOf(t, f.snaps.profileDir(sp)); got != "kept" {
		t.Errorf("Local Storage after a lost profile's launch = %q; want %q from the snapshot", got, "kept")
	}
	if !slices.Contains(fb.eventKinds(sp.Key), api.EventProfileRebuilt) {
		t.Errorf("events = %v; want %s", fb.eventKinds(sp.Key), api.EventProfileRebuilt)
	}
	if r, ok := snapshot.LastRebuild(f.snaps.store.Dir, sp.Slug); !ok || r.Why != snapshot.WhyLost || r.Snapshot != info.ID {
		t.Errorf("LastRebuild = %+v, %v; want lost from %s", r, ok, info.ID)
	}
}

// A restore cut short by a crash between moving the profile aside and putting the snapshot's in its place
// leaves the old profile back at the next launch (not a rebuild), and no staged or replaced folder behind.
func TestInterruptedRestoreIsUndone(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	runAndStop(t, f, sp, "snapshot's")
	profile := f.snaps.profileDir(sp)
	writeFakeProfile(t, profile, "the person's")
	dir := filepath.Dir(profile)
	if err := os.Rename(profile, filepath.Join(dir, "."+sp.Slug+".replaced-crashed1")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "."+sp.Slug+".restore-crashed1", "Default"), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	if got := localStorageOf(t, profile); got != "the person's" {
		t.Errorf("Local Storage after the interrupted restore = %q; want the profile that was moved aside", got)
	}
	if slices.Contains(fb.eventKinds(sp.Key), api.EventProfileRebuilt) {
		t.Errorf("events = %v; want no rebuild", fb.eventKinds(sp.Key))
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "."+sp.Slug+".*")); len(left) != 0 {
		t.Errorf("left beside the profile: %q", left)
	}
}

// refuseMarked is a launch that fails as Chromium exiting at start does, on a profile holding a file named
// REFUSED.
func refuseMarked(f *Fleet) func(Spec) error {
	return func(sp Spec) error {
		if _, err := os.Stat(filepath.Join(f.snaps.profileDir(sp), "REFUSED")); err == nil {
			return &chrome.LaunchError{Attempts: 3, Err: fmt.Errorf("%w before it was ready: exit status 21", chrome.ErrExited)}
		}
		return nil
	}
}

func TestBrokenProfileRetriedFromSnapshot(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	runAndStop(t, f, sp, "good")
	profile := f.snaps.profileDir(sp)
	os.WriteFile(filepath.Join(profile, "REFUSED"), nil, 0o600)
	fb.refuse = refuseMarked(f)
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatalf("Ensure on a refused profile with a snapshot = %v; want it started in a rebuilt one", err)
	}
	broken, _ := filepath.Glob(profile + ".broken-*")
	if len(broken) != 1 || !fileThere(filepath.Join(broken[0], "REFUSED")) {
		t.Fatalf("broken profiles kept = %v; want the refused one as %s.broken-<time>", broken, profile)
	}
	if fileThere(filepath.Join(profile, "REFUSED")) || localStorageOf(t, profile) != "good" {
		t.Errorf("the running profile is not the snapshot's")
	}
	var msg string
	for _, ev := range fb.events {
		if ev.Kind == api.EventProfileBroken {
			msg = ev.Message
		}
	}
	if !strings.Contains(msg, broken[0]) {
		t.Errorf("%s event = %q; want it to name %s", api.EventProfileBroken, msg, broken[0])
	}
	if r, ok := snapshot.LastRebuild(f.snaps.store.Dir, sp.Slug); !ok || r.Why != snapshot.WhyBroken || r.KeptAs != broken[0] {
		t.Errorf("LastRebuild = %+v; want broken, kept as %s", r, broken[0])
	}
}

func TestFailureNotTheProfilesPutsItBack(t *testing.T) {
	f, fb := fakeFleet(t, func(c *Config) { c.RelaunchMax = 0 })
	sp := fakeStore(t, f, "Shop")
	runAndStop(t, f, sp, "mine")
	fb.refuse = func(Spec) error { // a Chromium that exits at start on any profile: a broken binary
		return &chrome.LaunchError{Attempts: 3, Err: fmt.Errorf("%w at once: exit status 127", chrome.ErrExited)}
	}
	os.WriteFile(filepath.Join(f.snaps.profileDir(sp), "newer-than-the-snapshot"), nil, 0o600)
	if _, err := f.Ensure(context.Background(), sp); !errors.Is(err, errdefs.ErrStartFailed) || !strings.Contains(err.Error(), "exit status 127") {
		t.Fatalf("Ensure = %v; want the launch's own failure", err)
	}
	if broken, _ := filepath.Glob(f.snaps.profileDir(sp) + ".broken-*"); len(broken) != 0 {
		t.Errorf("broken profiles kept = %v; want none: the profile was not the cause", broken)
	}
	if !fileThere(filepath.Join(f.snaps.profileDir(sp), "newer-than-the-snapshot")) {
		t.Error("the profile was not put back as it was")
	}
	if slices.Contains(fb.eventKinds(sp.Key), api.EventProfileBroken) {
		t.Errorf("events = %v; want no %s", fb.eventKinds(sp.Key), api.EventProfileBroken)
	}
}

func TestRestoreGivesTheOlderState(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	first := runAndStop(t, f, sp, "older")
	runAndStop(t, f, sp, "newer")
	ctx := context.Background()

	if _, err := f.Ensure(ctx, sp); err != nil {
		t.Fatal(err)
	}
	_, err := f.Snapshots().Restore(ctx, sp, first.ID)
	if !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "vibe-browser browser stop "+sp.Slug) {
		t.Errorf("Restore while running = %v; want a conflict naming vibe-browser browser stop %s", err, sp.Slug)
	}
	if err := f.Stop(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	f.snaps.wg.Wait()
	r, err := f.Snapshots().Restore(ctx, sp, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != first.ID || localStorageOf(t, f.snaps.profileDir(sp)) != "older" {
		t.Errorf("Restore(%s) = %s, Local Storage %q; want %s, %q", first.ID, r.ID, localStorageOf(t, f.snaps.profileDir(sp)), first.ID, "older")
	}
	if jar, err := f.snaps.readJar(sp.Slug); err != nil || string(jar) != "jar of older" {
		t.Errorf("checkpoint after restore = %q, %v; want the snapshot's %q", jar, err, "jar of older")
	}
	if rest, _ := filepath.Glob(filepath.Join(filepath.Dir(f.snaps.profileDir(sp)), ".*")); len(rest) != 0 {
		t.Errorf("restore left %v", rest)
	}
	if !slices.Contains(fb.eventKinds(sp.Key), api.EventProfileRestored) {
		t.Errorf("events = %v; want %s", fb.eventKinds(sp.Key), api.EventProfileRestored)
	}
	if _, err := f.Snapshots().Restore(ctx, sp, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Restore(nope) = %v; want errdefs.ErrNotFound", err)
	}
}

func TestLiveSnapshotOfALongRunningBrowser(t *testing.T) {
	f, _ := fakeFleet(t, func(c *Config) { c.SnapshotEvery = 300 * time.Millisecond })
	sp := fakeStore(t, f, "Shop")
	runAndStop(t, f, sp, "stopped")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Snapshots().Loop(ctx) }()
	defer func() { cancel(); <-done }()
	if _, err := f.Ensure(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a live snapshot", func() bool {
		all, _ := f.Snapshots().List(sp)
		return len(all) > 0 && all[0].Kind == snapshot.Live
	})
}

func fileThere(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
