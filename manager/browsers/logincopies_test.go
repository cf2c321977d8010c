package browsers

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
	"vibebrowser/manager/snapshot"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// These tests drive SPEC §19's copies of a store's login through the fake backend and copies held in memory
// (the cluster's own, on a real JetStream, are manager/cluster's tests): what a home writes reaches them,
// sealed with the cluster's key, and a fresh home launching the store takes them.

// memObject is one copy: sealed bytes and their time.
type memObject struct {
	b  []byte
	at time.Time
}

// memCopies are LoginCopies in memory, with the cluster's rules: a jar is replaced only by a newer one.
type memCopies struct {
	mu    sync.Mutex
	jars  map[string]memObject
	snaps map[string]map[string]memObject // store id → snapshot id → copy
}

func newMemCopies() *memCopies {
	return &memCopies{jars: map[string]memObject{}, snaps: map[string]map[string]memObject{}}
}

func (m *memCopies) PutJar(_ context.Context, store string, sealed []byte, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if cur, ok := m.jars[store]; ok && !at.After(cur.at) {
		return nil
	}
	m.jars[store] = memObject{bytes.Clone(sealed), at}
	return nil
}

func (m *memCopies) PutSnapshot(_ context.Context, store, id string, r io.Reader, at time.Time) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.snaps[store] == nil {
		m.snaps[store] = map[string]memObject{}
	}
	m.snaps[store][id] = memObject{b, at}
	return nil
}

func (m *memCopies) Jar(_ context.Context, store string) ([]byte, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	j, ok := m.jars[store]
	if !ok {
		return nil, time.Time{}, errdefs.NotFound("no jar of %s", store)
	}
	return bytes.Clone(j.b), j.at, nil
}

func (m *memCopies) NewestSnapshot(_ context.Context, store string) (string, time.Time, io.ReadCloser, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var id string
	var newest memObject
	for sid, o := range m.snaps[store] {
		if id == "" || o.at.After(newest.at) {
			id, newest = sid, o
		}
	}
	if id == "" {
		return "", time.Time{}, nil, errdefs.NotFound("no snapshot of %s", store)
	}
	return id, newest.at, io.NopCloser(bytes.NewReader(newest.b)), nil
}

// jar is store's jar copy, opened with key as slug's.
func (m *memCopies) jar(t *testing.T, key *seal.Key, store, slug string) (content, sealed []byte, at time.Time) {
	t.Helper()
	m.mu.Lock()
	j, ok := m.jars[store]
	m.mu.Unlock()
	if !ok {
		t.Fatalf("no jar of %s in the copies", store)
	}
	content, err := logins.OpenJar(key, slug, j.b)
	if err != nil {
		t.Fatalf("the jar copy does not open with the cluster's key: %v", err)
	}
	return content, j.b, j.at
}

// hangingCopies answer nothing: every call waits for its context's end, as a cluster that is cut off.
type hangingCopies struct{}

func (h *hangingCopies) PutJar(ctx context.Context, _ string, _ []byte, _ time.Time) error {
	<-ctx.Done()
	return ctx.Err()
}

func (h *hangingCopies) PutSnapshot(ctx context.Context, _, _ string, _ io.Reader, _ time.Time) error {
	<-ctx.Done()
	return ctx.Err()
}

func (h *hangingCopies) Jar(ctx context.Context, _ string) ([]byte, time.Time, error) {
	<-ctx.Done()
	return nil, time.Time{}, ctx.Err()
}

func (h *hangingCopies) NewestSnapshot(ctx context.Context, _ string) (string, time.Time, io.ReadCloser, error) {
	<-ctx.Done()
	return "", time.Time{}, nil, ctx.Err()
}

func clusterKey(t *testing.T) *seal.Key {
	t.Helper()
	raw := make([]byte, 32)
	rand.Read(raw)
	k, err := seal.NewKey(raw)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// inCluster makes a fake fleet a cluster's host, with copies and the cluster's key.
func inCluster(copies LoginCopies, key *seal.Key) func(*Config) {
	return func(c *Config) { c.LoginCopies, c.ClusterKey = copies, key }
}

// sameStore adds sp's store, same id and slug, to another home's state, as the cluster's stores are on every
// host.
func sameStore(t *testing.T, f *Fleet, sp Spec) {
	t.Helper()
	if _, err := f.db.CreateStore(context.Background(), state.Store{ID: sp.Key, Name: "Shop", Slug: sp.Slug,
		Backend: state.BackendChrome}); err != nil {
		t.Fatal(err)
	}
}

// noneInTheClear fails when b holds any of clear: what reaches the copies is sealed.
func noneInTheClear(t *testing.T, what string, b []byte, clear ...string) {
	t.Helper()
	for _, c := range clear {
		if bytes.Contains(b, []byte(c)) {
			t.Errorf("%s holds %q in the clear", what, c)
		}
	}
	if bytes.Contains(b, []byte{0x1f, 0x8b, 0x08}) {
		t.Errorf("%s holds a gzip header in the clear", what)
	}
}

// TestLoginCopiesCarryTheLoginToAFreshHome: a stop's snapshot and a checkpoint of home A reach the copies,
// sealed with the cluster's key; home B, which has neither the profile, the snapshot nor the checkpoint,
// launches the store in a profile rebuilt from the cluster's snapshot, with the cluster's checkpoint as its
// own, written with the same time; B makes no key of its own.
func TestLoginCopiesCarryTheLoginToAFreshHome(t *testing.T) {
	copies, key := newMemCopies(), clusterKey(t)
	a, _ := fakeFleet(t, inCluster(copies, key))
	sp := fakeStore(t, a, "Shop")
	ctx := context.Background()
	info := runAndStop(t, a, sp, "ls-from-home-a")
	if _, err := a.Snapshots().Restore(ctx, sp, info.ID); err != nil { // its checkpoint, written anew
		t.Fatal(err)
	}
	if err := a.AwaitLoginCopies(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	content, sealed, at := copies.jar(t, key, sp.Key, sp.Slug)
	if string(content) != "jar of ls-from-home-a" {
		t.Errorf("the jar copy = %q; want home A's checkpoint", content)
	}
	noneInTheClear(t, "the jar copy", sealed, "jar of", "ls-from-home-a")
	if fi, err := os.Stat(logins.JarPath(a.cfg.Home, sp.Slug)); err != nil || !fi.ModTime().Equal(at) {
		t.Errorf("the jar copy's time = %v; want the checkpoint file's (%v)", at, err)
	}
	id, _, rc, err := copies.NewestSnapshot(ctx, sp.Key)
	if err != nil || id != info.ID {
		t.Fatalf("the snapshot copy = %s, %v; want %s", id, err, info.ID)
	}
	snap, _ := io.ReadAll(rc)
	local, _ := os.ReadFile(info.Path)
	if !bytes.Equal(snap, local) {
		t.Errorf("the snapshot copy is not the snapshot file")
	}
	noneInTheClear(t, "the snapshot copy", snap, "SQLite format 3", "ustar", "ls-from-home-a", "Local Storage", "jar of")
	if _, err := os.Stat(filepath.Join(a.cfg.Home, seal.KeyFile)); err == nil {
		t.Errorf("home A made its own key in a cluster")
	}

	b, fb := fakeFleet(t, inCluster(copies, key))
	sameStore(t, b, sp)
	if _, err := b.Ensure(ctx, sp); err != nil {
		t.Fatal(err)
	}
	if got := localStorageOf(t, b.snaps.profileDir(sp)); got != "ls-from-home-a" {
		t.Errorf("home B's Local Storage = %q; want home A's, from the cluster's snapshot", got)
	}
	if !slices.Contains(fb.eventKinds(sp.Key), api.EventProfileRebuilt) {
		t.Errorf("home B's events = %v; want %s", fb.eventKinds(sp.Key), api.EventProfileRebuilt)
	}
	if jar, err := b.snaps.readJar(sp.Slug); err != nil || string(jar) != "jar of ls-from-home-a" {
		t.Errorf("home B's checkpoint = %q, %v; want the cluster's", jar, err)
	}
	if fi, err := os.Stat(logins.JarPath(b.cfg.Home, sp.Slug)); err != nil || !fi.ModTime().Equal(at) || fi.Mode().Perm() != 0o600 {
		t.Errorf("home B's checkpoint file: %v; want 0600, written at the cluster's time %v", err, at)
	}
	if all, _ := b.Snapshots().List(sp); len(all) != 1 || all[0].ID != info.ID {
		t.Errorf("home B's snapshots = %+v; want the cluster's %s", all, info.ID)
	}
	if _, err := os.Stat(filepath.Join(b.cfg.Home, seal.KeyFile)); err == nil {
		t.Errorf("home B made its own key in a cluster")
	}
}

// TestLoginCopiesNewestJarWins: a launch takes the cluster's checkpoint only when it is newer than this
// host's.
func TestLoginCopiesNewestJarWins(t *testing.T) {
	copies, key := newMemCopies(), clusterKey(t)
	f, _ := fakeFleet(t, inCluster(copies, key))
	sp := fakeStore(t, f, "Shop")
	ctx := context.Background()
	if err := f.snaps.writeJar(sp.Slug, []byte("this host's"), nil); err != nil {
		t.Fatal(err)
	}
	path := logins.JarPath(f.cfg.Home, sp.Slug)
	fi, _ := os.Stat(path)
	put := func(content string, at time.Time) { // as another host would have, whatever the copies held
		copies.mu.Lock()
		copies.jars[sp.Key] = memObject{key.Seal([]byte(content), "jar:"+sp.Slug), at}
		copies.mu.Unlock()
	}
	tests := []struct {
		name    string
		cluster time.Time
		want    string
	}{
		{"the cluster's is older", fi.ModTime().Add(-time.Hour), "this host's"},
		{"the cluster's is as old", fi.ModTime(), "this host's"},
		{"the cluster's is newer", fi.ModTime().Add(time.Hour), "the cluster's"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			put("the cluster's", tt.cluster)
			if _, err := f.Ensure(ctx, sp); err != nil {
				t.Fatal(err)
			}
			if err := f.Stop(ctx, sp.Key); err != nil {
				t.Fatal(err)
			}
			f.snaps.wg.Wait()
			if jar, err := f.snaps.readJar(sp.Slug); err != nil || string(jar) != tt.want {
				t.Errorf("checkpoint after the launch = %q, %v; want %q", jar, err, tt.want)
			}
		})
	}
}

// TestLoginCopiesAnsweringNothingDelayNothing: with copies that never answer (a cluster cut off), a launch
// of a store this host holds no login of goes on with what is here after fetchBoundNone (the cluster's copy
// would be its only login), a stop is not delayed, a person's restore neither, and the quit barrier waits
// copiesQuitBound for them at most.
func TestLoginCopiesAnsweringNothingDelayNothing(t *testing.T) {
	f, fb := fakeFleet(t, inCluster(&hangingCopies{}, clusterKey(t)))
	sp := fakeStore(t, f, "Shop")
	ctx := context.Background()
	began := time.Now()
	if _, err := f.Ensure(ctx, sp); err != nil { // a lost profile: the jar's answer, then the snapshot's, are awaited
		t.Fatal(err)
	}
	if took := time.Since(began); took > fetchBoundNone+2*time.Second {
		t.Errorf("a launch with copies that do not answer took %v; want at most fetchBoundNone (%v) more than one", took, fetchBoundNone)
	}
	if fb.launches() != 1 {
		t.Errorf("launches = %d; want 1", fb.launches())
	}
	writeFakeProfile(t, f.snaps.profileDir(sp), "here")
	began = time.Now()
	if err := f.Stop(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	f.snaps.wg.Wait() // the stop's snapshot, handed to the copies
	all, _ := f.Snapshots().List(sp)
	if _, err := f.Snapshots().Restore(ctx, sp, all[0].ID); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("a stop, its snapshot and a restore with copies that do not answer took %v", took)
	}
	actx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := f.AwaitLoginCopies(actx, sp.Key); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AwaitLoginCopies with copies that do not answer = %v; want the deadline", err)
	}
	began = time.Now()
	f.Quit(false)
	if took := time.Since(began); took > copiesQuitBound+2*time.Second {
		t.Errorf("the quit barrier with copies that do not answer took %v; want about copiesQuitBound (%v)", took, copiesQuitBound)
	}
}

// TestClusterKeyOpensTheHomesOldFiles: a home that joins a cluster still opens the checkpoint and the
// snapshot its own key sealed before, and seals every new one with the cluster's key only.
func TestClusterKeyOpensTheHomesOldFiles(t *testing.T) {
	key := clusterKey(t)
	f, _ := fakeFleet(t, inCluster(newMemCopies(), key))
	sp := fakeStore(t, f, "Shop")
	homeKey, err := seal.LoadKey(f.cfg.Home, "") // made now: the home before it joined
	if err != nil {
		t.Fatal(err)
	}
	if err := logins.WriteJar(homeKey, f.cfg.Home, sp.Slug, []byte("old jar"), nil); err != nil {
		t.Fatal(err)
	}
	writeFakeProfile(t, f.snaps.profileDir(sp), "old profile")
	old := &snapshot.Store{Dir: f.snaps.store.Dir, Keep: 5, Key: func() (*seal.Key, error) { return homeKey, nil }}
	info, err := old.Take(sp.Slug, f.snaps.profileDir(sp), []byte("old jar"), snapshot.Full)
	if err != nil {
		t.Fatal(err)
	}
	if jar, err := f.snaps.readJar(sp.Slug); err != nil || string(jar) != "old jar" {
		t.Errorf("the home key's checkpoint in a cluster = %q, %v; want it opened", jar, err)
	}
	if r, err := f.Snapshots().Restore(context.Background(), sp, info.ID); err != nil || string(r.Jar) != "old jar" {
		t.Errorf("Restore of the home key's snapshot in a cluster = %+v, %v; want it restored", r, err)
	}
	if err := f.snaps.writeJar(sp.Slug, []byte("new jar"), nil); err != nil {
		t.Fatal(err)
	}
	newInfo, err := f.Snapshots().Take(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		k    *seal.Key
		want bool
	}{{"cluster", key, true}, {"home", homeKey, false}} {
		_, _, err := logins.ReadJar(tt.k, f.cfg.Home, sp.Slug)
		if (err == nil) != tt.want {
			t.Errorf("the new checkpoint opened with the %s key: %v; want opened %v", tt.name, err, tt.want)
		}
		st := &snapshot.Store{Dir: f.snaps.store.Dir, Keep: 5, Key: func() (*seal.Key, error) { return tt.k, nil }}
		_, err = st.Restore(sp.Slug, newInfo.ID, filepath.Join(t.TempDir(), "p"))
		if (err == nil) != tt.want {
			t.Errorf("the new snapshot restored with the %s key: %v; want restored %v", tt.name, err, tt.want)
		}
	}
}

// TestSingleHostHasNoCopies: without copies nothing of SPEC §19 runs, and the home's own key seals, as
// before.
func TestSingleHostHasNoCopies(t *testing.T) {
	f, _ := fakeFleet(t, nil)
	sp := fakeStore(t, f, "Shop")
	if f.copies != nil || f.logins.copies != nil {
		t.Fatal("a single host has copies")
	}
	runAndStop(t, f, sp, "here")
	if err := f.AwaitLoginCopies(context.Background(), sp.Key); err != nil {
		t.Errorf("AwaitLoginCopies on a single host = %v; want nil", err)
	}
	homeKey, err := seal.LoadKey(f.cfg.Home, "")
	if err != nil {
		t.Fatal(err)
	}
	if jar, _, err := logins.ReadJar(homeKey, f.cfg.Home, sp.Slug); err != nil || string(jar) != "jar of here" {
		t.Errorf("the checkpoint with the home's key = %q, %v; want it opened", jar, err)
	}
}

// TestRestoreOfNoCheckpointInACluster: a person's restore of a snapshot that holds no checkpoint leaves an
// empty one, newer than the cluster's, and hands it to the copies: the next launch, here or on another host,
// is the snapshot's state, not the cluster's older login set back into it.
func TestRestoreOfNoCheckpointInACluster(t *testing.T) {
	copies, key := newMemCopies(), clusterKey(t)
	f, _ := fakeFleet(t, inCluster(copies, key))
	sp := fakeStore(t, f, "Shop")
	ctx := context.Background()
	if _, err := f.Ensure(ctx, sp); err != nil {
		t.Fatal(err)
	}
	writeFakeProfile(t, f.snaps.profileDir(sp), "no jar")
	if err := f.Stop(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	f.snaps.wg.Wait()
	all, _ := f.Snapshots().List(sp)
	if err := f.snaps.writeJar(sp.Slug, []byte("a later login"), nil); err != nil {
		t.Fatal(err)
	}
	f.copies.jarWritten(sp)
	if err := f.AwaitLoginCopies(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Snapshots().Restore(ctx, sp, all[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := f.AwaitLoginCopies(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	content, _, _ := copies.jar(t, key, sp.Key, sp.Slug)
	if jar, err := logins.Decode(content); err != nil || len(jar.Cookies) != 0 {
		t.Errorf("the jar copy after restoring a snapshot without one = %q, %v; want an empty checkpoint", content, err)
	}
	if _, err := f.Ensure(ctx, sp); err != nil {
		t.Fatal(err)
	}
	if content, err := f.snaps.readJar(sp.Slug); err != nil || bytes.Contains(content, []byte("later")) {
		t.Errorf("the checkpoint at the launch after the restore = %q, %v; want the empty one", content, err)
	}
}
