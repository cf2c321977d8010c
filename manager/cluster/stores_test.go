package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/cluster"
)

// follower keeps what Follow handed it, per store.
type follower struct {
	mu   sync.Mutex
	last map[string]cluster.StoreRecord
	seen []uint64 // every revision handed, in order
}

// followStores runs host i's follower of the stores bucket until the test ends.
func followStores(t *testing.T, s *cluster.Stores) *follower {
	t.Helper()
	f := &follower{last: map[string]cluster.StoreRecord{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		s.Follow(ctx, func(r cluster.StoreRecord) {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.last[r.ID] = r
			f.seen = append(f.seen, r.Revision)
		})
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return f
}

// has reports whether the follower's newest record of id satisfies ok.
func (f *follower) has(id string, ok func(cluster.StoreRecord) bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, found := f.last[id]
	return found && ok(r)
}

// storesOf is the stores bucket as host i, sealed with the cluster's secret.
func storesOf(t *testing.T, c *testCluster, i int) *cluster.Stores {
	t.Helper()
	return cluster.NewStores(buckets(t, c, i).Stores, c.Hosts[i].Identity.Secret(), zerolog.Nop())
}

// A store put on host1 reaches the followers of host2 and host3 (one that starts late gets the current
// records first); an update by compare-and-set on host2 reaches them, a stale revision or a second create is
// refused; a removal on host3 is handed on as one; each revision is handed once.
func TestStoresFollowedOnEveryHost(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s1, s2, s3 := storesOf(t, c, 0), storesOf(t, c, 1), storesOf(t, c, 2)
	f2 := followStores(t, s2)
	rec := cluster.StoreRecord{ID: "st-1", Name: "Shop One", Slug: "shop-one", Backend: "chrome", Token: "tok-1",
		Config: json.RawMessage(`{"timezone":"Europe/Berlin"}`), By: "host1"}
	rev, err := s1.Put(ctx, rec, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Put(ctx, rec, 0); !errors.Is(err, cluster.ErrStoreMoved) {
		t.Errorf("a second create of st-1: %v; want ErrStoreMoved", err)
	}
	f3 := followStores(t, s3) // late: the current records come first
	for name, f := range map[string]*follower{"host2": f2, "host3": f3} {
		waitFor(t, name+" follows st-1's creation", 10*time.Second, func() bool {
			return f.has("st-1", func(r cluster.StoreRecord) bool { return r.Token == "tok-1" && r.Revision == rev })
		})
	}

	got, err := s2.Get(ctx, "st-1")
	if err != nil {
		t.Fatal(err)
	}
	got.Config, got.By = json.RawMessage(`{"timezone":"Asia/Tokyo"}`), "host2"
	if _, err := s2.Put(ctx, got, got.Revision); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Put(ctx, rec, rev); !errors.Is(err, cluster.ErrStoreMoved) {
		t.Errorf("an update of st-1 at a stale revision: %v; want ErrStoreMoved", err)
	}
	for name, f := range map[string]*follower{"host2": f2, "host3": f3} {
		waitFor(t, name+" follows st-1's update", 10*time.Second, func() bool {
			return f.has("st-1", func(r cluster.StoreRecord) bool { return string(r.Config) == `{"timezone":"Asia/Tokyo"}` })
		})
	}

	if err := s3.Delete(ctx, "st-1"); err != nil {
		t.Fatal(err)
	}
	if err := s3.Delete(ctx, "st-1"); err != nil {
		t.Errorf("removing a removed store: %v; want no error", err)
	}
	for name, f := range map[string]*follower{"host2": f2, "host3": f3} {
		waitFor(t, name+" follows st-1's removal", 10*time.Second, func() bool {
			return f.has("st-1", func(r cluster.StoreRecord) bool { return r.Deleted })
		})
	}
	if _, err := s1.Get(ctx, "st-1"); !errors.Is(err, cluster.ErrStoreGone) {
		t.Errorf("Get of a removed store: %v; want ErrStoreGone", err)
	}
	f2.mu.Lock()
	defer f2.mu.Unlock()
	for i := 1; i < len(f2.seen); i++ {
		if f2.seen[i] <= f2.seen[i-1] {
			t.Errorf("host2's follower was handed revisions %v; want each once, in order", f2.seen)
		}
	}
}

// Nothing of a store is in the clear in the bucket: its token, its proxy's credentials and its Ziniao
// password are not in the raw entry. A record moved under another store's key does not open.
func TestStoresSealed(t *testing.T) {
	c := startCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s1 := storesOf(t, c, 0)
	secrets := []string{"tok-d41d8cd98f00", "proxy-user-7f3a", "proxy-pass-9b1c", "ziniao-pass-5e2d", "Shop Secretive"}
	rec := cluster.StoreRecord{ID: "st-z", Name: "Shop Secretive", Slug: "shop-secretive", Backend: "ziniao",
		Token: secrets[0], Config: json.RawMessage(`{"proxy":"http://proxy-user-7f3a:proxy-pass-9b1c@10.0.0.1:8080"}`),
		ZiniaoCompany: "acme", ZiniaoUsername: "seller", ZiniaoPassword: secrets[3], ZiniaoBrowser: "123"}
	if _, err := s1.Put(ctx, rec, 0); err != nil {
		t.Fatal(err)
	}
	raw := buckets(t, c, 1).Stores
	e, err := raw.Get(ctx, "st-z")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if bytes.Contains(e.Value(), []byte(s)) {
			t.Errorf("the raw entry of st-z holds %q in the clear", s)
		}
	}
	got, err := storesOf(t, c, 2).Get(ctx, "st-z")
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != rec.Token || got.ZiniaoPassword != rec.ZiniaoPassword || string(got.Config) != string(rec.Config) {
		t.Errorf("st-z as host3 opens it = %+v; want %+v", got, rec)
	}
	if _, err := raw.Put(ctx, "st-other", e.Value()); err != nil {
		t.Fatal(err)
	}
	if _, err := s1.Get(ctx, "st-other"); err == nil {
		t.Error("st-z's sealed record under the key st-other opened; want it refused")
	}
}
