package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/cluster"
)

// testTTL is the leases' TTL in these tests: short, so that a lapse is seen in a few seconds.
const testTTL = 1500 * time.Millisecond

// lostLog records the Lost calls of one host's leases.
type lostLog struct {
	mu   sync.Mutex
	at   map[string]time.Time
	why  map[string]string
	told chan string
}

func newLostLog() *lostLog {
	return &lostLog{at: map[string]time.Time{}, why: map[string]string{}, told: make(chan string, 16)}
}

func (l *lostLog) lost(store, why string) {
	l.mu.Lock()
	l.at[store], l.why[store] = time.Now(), why
	l.mu.Unlock()
	l.told <- store
}

// hostLeases is host i's leases over its own node, run until the test ends (or stop is called).
func hostLeases(t *testing.T, b *cluster.Buckets, host string, lost *lostLog) (l *cluster.Leases, stop func()) {
	t.Helper()
	l = cluster.NewLeases(b.Leases, cluster.LeaseConfig{Host: host, TTL: testTTL, Lost: lost.lost, Log: zerolog.Nop()})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); l.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return l, stop
}

// A held lease is never taken while its holder renews it; once the holder stops renewing, another host takes
// it one TTL after it last moved, never before; the old holder, renewing again, loses it.
func TestLeaseExactlyOneHolder(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	b1, b2 := buckets(t, c, 0), buckets(t, c, 1)
	lost1, lost2 := newLostLog(), newLostLog()
	l1, stop1 := hostLeases(t, b1, "host1", lost1)
	l2, _ := hostLeases(t, b2, "host2", lost2)

	if err := l1.Acquire(ctx, "store-a"); err != nil {
		t.Fatal(err)
	}
	if !l1.Holds("store-a") {
		t.Fatal("host1 does not hold the lease it took")
	}
	deadline := time.Now().Add(2 * testTTL)
	for time.Now().Before(deadline) {
		var held *cluster.HeldError
		if err := l2.Acquire(ctx, "store-a"); !errors.As(err, &held) || held.Host != "host1" {
			t.Fatalf("host2 Acquire while host1 renews = %v; want a HeldError naming host1", err)
		}
		time.Sleep(testTTL / 10)
	}
	if !l1.Holds("store-a") {
		t.Fatal("host1 lost a lease it renewed")
	}

	// host1's manager stops renewing (a pause, or a cut): host2 may take the lease only a TTL after its
	// last renewal, and by then host1 has fenced itself.
	stop1()
	stoppedAt := time.Now()
	var took time.Time
	for took.IsZero() {
		if time.Since(stoppedAt) > 4*testTTL {
			t.Fatal("host2 never took the lease host1 stopped renewing")
		}
		var held *cluster.HeldError
		switch err := l2.Acquire(ctx, "store-a"); {
		case err == nil:
			took = time.Now()
		case !errors.As(err, &held):
			t.Fatal(err)
		}
		time.Sleep(testTTL / 20)
	}
	if d := took.Sub(stoppedAt); d < testTTL-testTTL/6 { // host1 may have renewed up to renewEvery before stopping
		t.Errorf("host2 took the lease %s after host1's last chance to renew; want at least the TTL (%s) less one renewal", d, testTTL)
	}
	if l1.Holds("store-a") {
		t.Error("host1 still counts a lease it has not renewed for a TTL as held")
	}
}

// A holder cut off from the cluster (its renewals fail) calls Lost before any other host can take its
// lease: the store's browser is stopped on the old host before it starts on the new one.
func TestLeaseFencedBeforeTakeover(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	b1, b2 := buckets(t, c, 0), buckets(t, c, 1)
	lost1 := newLostLog()
	l1, _ := hostLeases(t, b1, "host1", lost1)
	l2, _ := hostLeases(t, b2, "host2", newLostLog())
	if err := l1.Acquire(ctx, "store-b"); err != nil {
		t.Fatal(err)
	}
	if err := l2.Observe(ctx); err != nil {
		t.Fatal(err)
	}
	cutAt := time.Now()
	cutOff(t, c, 0) // host1's node loses its routes: its writes find no quorum
	var took time.Time
	for took.IsZero() {
		if time.Since(cutAt) > 5*testTTL {
			t.Fatal("host2 never took the lease of the host cut off")
		}
		if err := l2.Acquire(ctx, "store-b"); err == nil {
			took = time.Now()
		}
		time.Sleep(testTTL / 20)
	}
	select {
	case store := <-lost1.told:
		if store != "store-b" {
			t.Fatalf("host1 lost %s; want store-b", store)
		}
	default:
		t.Fatal("host2 took the lease while host1 had not been told to stop the browser")
	}
	lost1.mu.Lock()
	lostAt := lost1.at["store-b"]
	lost1.mu.Unlock()
	if !lostAt.Before(took) {
		t.Errorf("host1 stopped at %s, host2 took over at %s; want the stop first", lostAt.Sub(cutAt), took.Sub(cutAt))
	}
	if margin := took.Sub(lostAt); margin < testTTL/3 {
		t.Errorf("host1 had %s to stop its browser before host2 took over; want at least a third of the TTL", margin)
	}
}

// A lease given up is free at once; a host takes back its own lease at once after its manager restarts.
func TestLeaseReleaseAndRestart(t *testing.T) {
	c := startCluster(t, 1)
	ctx := context.Background()
	b := buckets(t, c, 0)
	l1, stop1 := hostLeases(t, b, "host1", newLostLog())
	l2, _ := hostLeases(t, b, "host2", newLostLog())
	if err := l1.Acquire(ctx, "store-c"); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(ctx, "store-c"); err != nil {
		t.Fatal(err)
	}
	if err := l2.Acquire(ctx, "store-c"); err != nil {
		t.Fatalf("host2 Acquire after host1's release = %v; want the lease at once", err)
	}
	if err := l1.Acquire(ctx, "store-d"); err != nil {
		t.Fatal(err)
	}
	stop1()
	again, _ := hostLeases(t, b, "host1", newLostLog()) // host1's manager, restarted
	if err := again.Acquire(ctx, "store-d"); err != nil {
		t.Fatalf("host1 restarted Acquire of its own lease = %v; want it at once", err)
	}
}

// A host that takes a lease by force makes the old holder's next renewal lose it at once (Lost says who took
// it), on a replicated bucket too, whose lost compare-and-set reads differently from a single copy's.
func TestLeaseRenewalLosesToATakeover(t *testing.T) {
	for _, nodes := range []int{1, 3} {
		t.Run(fmt.Sprint(nodes, " nodes"), func(t *testing.T) { renewalLosesToATakeover(t, nodes) })
	}
}

func renewalLosesToATakeover(t *testing.T, nodes int) {
	c := startCluster(t, nodes)
	ctx := context.Background()
	b := buckets(t, c, 0)
	lost1 := newLostLog()
	l1, _ := hostLeases(t, b, "host1", lost1)
	if err := l1.Acquire(ctx, "store-e"); err != nil {
		t.Fatal(err)
	}
	// Another host writes the entry under host1 (as if it had judged host1 dead).
	e, err := b.Leases.Get(ctx, "store-e")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Leases.Update(ctx, "store-e", []byte(`{"host":"host2","epoch":9}`), e.Revision()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost1.told:
	case <-time.After(testTTL / 3): // within two renewals, well before the fence would act
		t.Fatal("host1's renewals did not see its lease taken")
	}
	lost1.mu.Lock()
	why := lost1.why["store-e"]
	lost1.mu.Unlock()
	if want := "taken by host host2"; !contains(why, want) {
		t.Errorf("Lost said %q; want it to say %q", why, want)
	}
}
