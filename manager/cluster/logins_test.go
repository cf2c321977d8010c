package cluster_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"vibebrowser/manager/cluster"
	"vibebrowser/manager/cluster/clustertest"
	"vibebrowser/mux/errdefs"
)

// openLogins opens the logins bucket as host i, keeping keep snapshots a store; the first open may wait for
// the cluster to place the bucket's stream.
func openLogins(t *testing.T, c *clustertest.Cluster, i, keep int) *cluster.Logins {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	js := c.Connect(t, i).JetStream()
	for {
		l, err := cluster.OpenLogins(ctx, js, len(c.Hosts), keep)
		if err == nil {
			return l
		}
		if ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sealedBytes stands for a sealed file of n bytes (random: the object store sees nothing else).
func sealedBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// storeID is a store id as state makes them.
func storeID() string {
	t := rand.Text()
	return strings.ToLower(t[:8] + "-" + t[8:12] + "-4" + t[12:15] + "-8" + t[15:18] + "-" + t[18:26])
}

// eventually waits until check passes: a read through one host's node may lag a write through another's by
// a moment (a replica's copy, or a consumer on one, catches up).
func eventually(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func jarIs(t *testing.T, l *cluster.Logins, store string, want []byte, wantAt time.Time) {
	t.Helper()
	eventually(t, func() error {
		got, at, err := l.Jar(context.Background(), store)
		if err != nil || !bytes.Equal(got, want) || !at.Equal(wantAt) {
			return fmt.Errorf("Jar(%s) = %d bytes at %v, %v; want %d bytes at %v", store, len(got), at, err, len(want), wantAt)
		}
		return nil
	})
}

func newestIs(t *testing.T, l *cluster.Logins, store, wantID string, want []byte) {
	t.Helper()
	eventually(t, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		id, _, rc, err := l.NewestSnapshot(ctx, store)
		if err != nil {
			return fmt.Errorf("NewestSnapshot(%s) = %v; want %s", store, err, wantID)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if id != wantID || err != nil || !bytes.Equal(got, want) {
			return fmt.Errorf("NewestSnapshot(%s) = %s, %d bytes, %v; want %s, %d bytes", store, id, len(got), err, wantID, len(want))
		}
		return nil
	})
}

// objectsAre waits until the bucket's objects of store, read through host i, are want.
func objectsAre(t *testing.T, c *clustertest.Cluster, i int, store string, want ...string) {
	t.Helper()
	eventually(t, func() error {
		if got := objects(t, c, i, store); strings.Join(sorted(got), " ") != strings.Join(sorted(want), " ") {
			return fmt.Errorf("objects of store %s = %q; want %q", store, sorted(got), sorted(want))
		}
		return nil
	})
}

// objects are the names of the bucket's objects of store.
func objects(t *testing.T, c *clustertest.Cluster, i int, store string) []string {
	t.Helper()
	ctx := context.Background()
	obs, err := c.Connect(t, i).JetStream().ObjectStore(ctx, cluster.BucketLogins)
	if err != nil {
		t.Fatal(err)
	}
	all, err := obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range all {
		if strings.HasPrefix(o.Name, store+"/") {
			out = append(out, o.Name)
		}
	}
	return out
}

// TestLoginsAcrossHosts (SPEC §19 "A store's login is the cluster's"), on a real 3-node cluster: a jar put
// through host1 is read through host3; an older jar never replaces a newer one, however the writes of three
// hosts interleave; snapshots are kept to keep, the newest returned; Forget removes every object of a
// store, and refuses what comes after it; with host2's node killed, puts and gets go on.
func TestLoginsAcrossHosts(t *testing.T) {
	c := clustertest.Start(t, 3)
	l1, l2, l3 := openLogins(t, c, 0, 2), openLogins(t, c, 1, 2), openLogins(t, c, 2, 2)
	ctx := context.Background()
	store := storeID()
	t0 := time.Date(2026, 12, 5, 1, 2, 3, 456789012, time.UTC)

	if _, _, err := l3.Jar(ctx, store); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("Jar of a store with none = %v; want errdefs.ErrNotFound", err)
	}
	jar1 := sealedBytes(300 << 10) // three chunks
	if err := l1.PutJar(ctx, store, jar1, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	jarIs(t, l3, store, jar1, t0.Add(time.Second))

	// An older jar, or one as old, is not written; a newer one is.
	if err := l2.PutJar(ctx, store, sealedBytes(100), t0); err != nil {
		t.Fatal(err)
	}
	if err := l2.PutJar(ctx, store, sealedBytes(100), t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	jarIs(t, l3, store, jar1, t0.Add(time.Second))
	jar2 := sealedBytes(1000)
	if err := l2.PutJar(ctx, store, jar2, t0.Add(2*time.Second)); err != nil {
		t.Fatal(err)
	}
	jarIs(t, l1, store, jar2, t0.Add(2*time.Second))

	// Three hosts writing at once, each its times in its own order: the newest of all stays.
	race := storeID()
	var wg sync.WaitGroup
	want := map[time.Time][]byte{}
	var newest time.Time
	orders := make([][]time.Time, 3)
	for h := range orders {
		for i := range 8 {
			at := t0.Add(time.Duration(h+3*((i*5+h)%8)) * time.Millisecond)
			orders[h] = append(orders[h], at)
			want[at] = []byte(fmt.Sprintf("jar of host%d at %v", h+1, at))
			if at.After(newest) {
				newest = at
			}
		}
	}
	for h, l := range []*cluster.Logins{l1, l2, l3} {
		order := orders[h]
		wg.Go(func() {
			for _, at := range order {
				if err := l.PutJar(ctx, race, want[at], at); err != nil {
					t.Errorf("host%d PutJar: %v", h+1, err)
				}
			}
		})
	}
	wg.Wait()
	jarIs(t, l2, race, want[newest], newest)

	// Snapshots: the newest keep (2) stay, the newest is returned; one older than those kept is not put.
	snaps := map[string][]byte{}
	for i := range 3 {
		id := fmt.Sprintf("20261205T01020%d.000000Z-full", i)
		snaps[id] = sealedBytes(200<<10 + i)
		if err := l1.PutSnapshot(ctx, store, id, bytes.NewReader(snaps[id]), t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	newestIs(t, l3, store, "20261205T010202.000000Z-full", snaps["20261205T010202.000000Z-full"])
	if err := l2.PutSnapshot(ctx, store, "20261205T000000.000000Z-live", bytes.NewReader(sealedBytes(10)), t0.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	objectsAre(t, c, 2, store, store+"/jar", store+"/snap/20261205T010201.000000Z-full", store+"/snap/20261205T010202.000000Z-full")

	// Forget: every object goes, another store's stay, and a late put of the forgotten store is refused.
	if err := l3.Forget(ctx, store); err != nil {
		t.Fatal(err)
	}
	objectsAre(t, c, 0, store)
	eventually(t, func() error {
		if _, _, err := l1.Jar(ctx, store); !errors.Is(err, errdefs.ErrNotFound) {
			return fmt.Errorf("Jar after Forget = %v; want errdefs.ErrNotFound", err)
		}
		if _, _, _, err := l1.NewestSnapshot(ctx, store); !errors.Is(err, errdefs.ErrNotFound) {
			return fmt.Errorf("NewestSnapshot after Forget = %v; want errdefs.ErrNotFound", err)
		}
		return nil
	})
	if err := l2.PutJar(ctx, store, sealedBytes(10), t0.Add(time.Hour)); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("PutJar after Forget = %v; want errdefs.ErrConflict", err)
	}
	if err := l2.PutSnapshot(ctx, store, "20261205T020000.000000Z-full", bytes.NewReader(sealedBytes(10)), t0.Add(time.Hour)); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("PutSnapshot after Forget = %v; want errdefs.ErrConflict", err)
	}
	if err := l3.Forget(ctx, store); err != nil {
		t.Errorf("Forget again = %v; want nil", err)
	}
	jarIs(t, l1, race, want[newest], newest)

	// host2's node goes: the bucket's two other replicas go on.
	c.Kill(1)
	after := storeID()
	jar3 := sealedBytes(5000)
	deadline := time.Now().Add(20 * time.Second)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := l1.PutJar(pctx, after, jar3, t0)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PutJar with host2's node down = %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	jarIs(t, l3, after, jar3, t0) // the first read may wait for the leaders host2 held to be elected again
	snap := sealedBytes(1 << 20)
	if err := l3.PutSnapshot(ctx, after, "20261205T010203.000000Z-full", bytes.NewReader(snap), t0); err != nil {
		t.Fatal(err)
	}
	newestIs(t, l1, after, "20261205T010203.000000Z-full", snap)
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// TestLoginsRefuseNamesOutsideTheStore: a store id (or a snapshot id) that could reach outside the store's
// objects is refused, naming the rule, before anything is read or written.
func TestLoginsRefuseNamesOutsideTheStore(t *testing.T) {
	c := clustertest.Start(t, 1)
	l := openLogins(t, c, 0, 2)
	ctx := context.Background()
	victim := storeID()
	if err := l.PutJar(ctx, victim, []byte("victim's"), time.Now()); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id, rule string
	}{
		{"", "empty"},
		{victim + "/jar", `"/"`},
		{"../" + victim, `"/"`},
		{"..", `".."`},
		{"a..b", `".."`},
		{".", `"."`},
		{"a\x00b", "NUL"},
		{"a\nb", "control character"},
		{strings.Repeat("a", 129), "longer than 128 bytes"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%.20q", tt.id), func(t *testing.T) {
			calls := map[string]error{
				"PutJar":      l.PutJar(ctx, tt.id, []byte("x"), time.Now()),
				"PutSnapshot": l.PutSnapshot(ctx, tt.id, "20261205T010203.000000Z-full", bytes.NewReader(nil), time.Now()),
				"Forget":      l.Forget(ctx, tt.id),
			}
			_, _, calls["Jar"] = l.Jar(ctx, tt.id)
			_, _, _, calls["NewestSnapshot"] = l.NewestSnapshot(ctx, tt.id)
			for name, err := range calls {
				if !errors.Is(err, errdefs.ErrInvalid) || !strings.Contains(err.Error(), tt.rule) {
					t.Errorf("%s(%q) = %v; want errdefs.ErrInvalid naming %s", name, tt.id, err, tt.rule)
				}
			}
		})
	}
	for _, id := range []string{"../" + victim, "x/../../jar", "a\x00"} {
		if err := l.PutSnapshot(ctx, victim, id, bytes.NewReader(nil), time.Now()); !errors.Is(err, errdefs.ErrInvalid) {
			t.Errorf("PutSnapshot(snapshot id %q) = %v; want errdefs.ErrInvalid", id, err)
		}
	}
	jarIs(t, l, victim, []byte("victim's"), mustJarTime(t, l, victim))
	objectsAre(t, c, 0, victim, victim+"/jar")
}

func mustJarTime(t *testing.T, l *cluster.Logins, store string) time.Time {
	t.Helper()
	_, at, err := l.Jar(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	return at
}
