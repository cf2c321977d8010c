package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/cluster"
)

// testHostTTL is the hosts' TTL in these tests.
const testHostTTL = 1500 * time.Millisecond

// member is one host of a test cluster: its heartbeats and its placement, run until stop.
type member struct {
	host      string
	hosts     *cluster.Hosts
	placement *cluster.Placement
	stop      func()
}

// join runs host's heartbeat (free memory mem) and placement on node i's buckets.
func join(t *testing.T, b *cluster.Buckets, host string, mem uint64, failover bool) *member {
	t.Helper()
	m := &member{host: host}
	m.hosts = cluster.NewHosts(b.Hosts, cluster.HostsConfig{Beat: testHostTTL / 10, TTL: testHostTTL, Log: zerolog.Nop(),
		Self: func() cluster.HostInfo {
			return cluster.HostInfo{Host: host, Instance: "home-of-" + host, Advertise: "127.0.0.1:1", FreeMem: mem}
		}})
	m.placement = cluster.NewPlacement(b.Placement, m.hosts, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { m.hosts.Run(ctx) })
	wg.Go(func() { m.placement.Run(ctx) })
	if failover {
		wg.Go(func() { m.placement.RunFailover(ctx, host) })
	}
	var once sync.Once
	m.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(m.stop)
	return m
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// allAlive waits until m sees each host alive.
func allAlive(t *testing.T, m *member, hosts ...string) {
	t.Helper()
	waitFor(t, m.host+" sees every host", 5*time.Second, func() bool {
		for _, h := range hosts {
			if !m.hosts.Alive(h) {
				return false
			}
		}
		return true
	})
}

// The rule spreads 200 stores over 3 hosts of equal memory within one store per 10; a store named to a host
// goes there; a store placed twice is refused naming its host; a host the cluster does not know is refused.
func TestPlacementSpreads(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	ms := []*member{join(t, buckets(t, c, 0), "host1", 8<<30, false), join(t, buckets(t, c, 1), "host2", 8<<30, false),
		join(t, buckets(t, c, 2), "host3", 8<<30, false)}
	allAlive(t, ms[0], "host1", "host2", "host3")
	for i := range 200 {
		if _, err := ms[0].placement.Place(ctx, fmt.Sprintf("store-%03d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	counts := ms[0].placement.Counts()
	lo, hi := 200, 0
	for _, h := range []string{"host1", "host2", "host3"} {
		lo, hi = min(lo, counts[h]), max(hi, counts[h])
	}
	if hi-lo > 200/3/10 {
		t.Errorf("200 stores over 3 equal hosts: %v; want them within one store per 10 of each other", counts)
	}
	waitFor(t, "host3 sees every placement", 5*time.Second, func() bool {
		n := 0
		for _, v := range ms[2].placement.Counts() {
			n += v
		}
		return n == 200
	})

	if got, err := ms[1].placement.Place(ctx, "named", "host3"); err != nil || got != "host3" {
		t.Fatalf("Place(named, host3) = %q, %v; want host3", got, err)
	}
	var placed *cluster.PlacedError
	if _, err := ms[2].placement.Place(ctx, "named", "host1"); !errors.As(err, &placed) || placed.Host != "host3" {
		t.Errorf("placing a placed store again = %v; want a PlacedError naming host3", err)
	}
	if _, err := ms[0].placement.Place(ctx, "other", "host9"); err == nil || !strings.Contains(err.Error(), "host1, host2, host3") {
		t.Errorf("placing on an unknown host = %v; want a refusal naming the hosts", err)
	}
}

// More free memory per store draws more stores.
func TestPlacementFollowsFreeMemory(t *testing.T) {
	c := startCluster(t, 1)
	ctx := context.Background()
	b := buckets(t, c, 0)
	big, small := join(t, b, "big", 12<<30, false), join(t, b, "small", 4<<30, false)
	allAlive(t, big, "big", "small")
	for i := range 40 {
		if _, err := big.placement.Place(ctx, fmt.Sprint("s", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := big.placement.Counts(); n["big"] != 30 || n["small"] != 10 {
		t.Errorf("40 stores over 12 GiB and 4 GiB free: %v; want 30 and 10", n)
	}
	_ = small
}

// A host that stops beating loses its stores to the living, spread by the rule, each moved once however
// many hosts fail it over at once; a host that beats again under the same name from another home is refused.
func TestFailoverMovesADeadHostsStores(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	m1, m2 := join(t, buckets(t, c, 0), "host1", 8<<30, true), join(t, buckets(t, c, 1), "host2", 8<<30, true)
	m3 := join(t, buckets(t, c, 2), "host3", 8<<30, true)
	allAlive(t, m1, "host1", "host2", "host3")
	allAlive(t, m2, "host1", "host2", "host3")
	for i := range 12 {
		if _, err := m3.placement.Place(ctx, fmt.Sprint("s", i), "host3"); err != nil {
			t.Fatal(err)
		}
	}
	m3.stop() // host3 dies: its beats stop
	diedAt := time.Now()
	waitFor(t, "host3's stores move", 4*testHostTTL, func() bool { return m1.placement.Counts()["host3"] == 0 })
	if d := time.Since(diedAt); d < testHostTTL-testHostTTL/10 {
		t.Errorf("host3's stores moved %s after its last beat; want at least its TTL (%s)", d, testHostTTL)
	}
	counts := m1.placement.Counts()
	if counts["host1"]+counts["host2"] != 12 || counts["host1"] < 4 || counts["host2"] < 4 {
		t.Errorf("host3's 12 stores went %v; want them spread over host1 and host2", counts)
	}

	twin := cluster.NewHosts(buckets(t, c, 2).Hosts, cluster.HostsConfig{Beat: testHostTTL / 10, TTL: testHostTTL,
		Self: func() cluster.HostInfo { return cluster.HostInfo{Host: "host1", Instance: "another-home"} }})
	tctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go twin.Run(tctx)
	waitFor(t, "the twin sees host1", 5*time.Second, func() bool { return twin.Known("host1") })
	if err := twin.Beat(ctx); !errors.Is(err, cluster.ErrTwin) {
		t.Errorf("a second home beating as host1 = %v; want ErrTwin", err)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A move is a compare-and-set from the host the store is on: the mover sees it at once, another host reads
// it at once with Refresh, and a move from a host the store has left is refused naming where it is.
func TestPlacementMoveAndRefresh(t *testing.T) {
	c := startCluster(t, 1)
	ctx := context.Background()
	b := buckets(t, c, 0)
	h1, h2 := join(t, b, "host1", 8<<30, false), join(t, b, "host2", 8<<30, false)
	allAlive(t, h1, "host1", "host2")
	if _, err := h1.placement.Place(ctx, "shop", "host1"); err != nil {
		t.Fatal(err)
	}
	if got, err := h2.placement.Refresh(ctx, "shop"); err != nil || got != "host1" {
		t.Fatalf("Refresh(shop) on host2 = %q, %v; want host1", got, err)
	}
	if err := h1.placement.Move(ctx, "shop", "host1", "host2"); err != nil {
		t.Fatal(err)
	}
	if got, _ := h1.placement.Where("shop"); got != "host2" {
		t.Errorf("the mover's view after the move: %q; want host2 at once", got)
	}
	if got, err := h2.placement.Refresh(ctx, "shop"); err != nil || got != "host2" {
		t.Errorf("Refresh(shop) on host2 after the move = %q, %v; want host2", got, err)
	}
	if got, _ := h2.placement.Where("shop"); got != "host2" {
		t.Errorf("host2's view after its Refresh: %q; want host2", got)
	}
	if err := h1.placement.Move(ctx, "shop", "host1", "host2"); err == nil || !strings.Contains(err.Error(), "on host host2 now") {
		t.Errorf("a move from a host the store left = %v; want a refusal naming host2", err)
	}
	if _, err := h1.placement.Refresh(ctx, "nowhere"); !errors.Is(err, cluster.ErrNotPlaced) {
		t.Errorf("Refresh of a store placed nowhere = %v; want ErrNotPlaced", err)
	}
}
