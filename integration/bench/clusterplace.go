package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/cluster"
)

// placeStores is how many stores the placement rows place over three hosts (SPEC §19's benchmark).
const placeStores = 200

// benchPlacement places placeStores stores by the rule (Place with no host) on a real 3-node JetStream cluster
// of embedded nodes in this process, three hosts of equal free memory beating into it as the placement tests
// have them: the spread (most − fewest stores on a host) and the time of one placement.
func benchPlacement(ctx context.Context, env *benchEnv) ([]Row, error) {
	const n = 3
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	ca := filepath.Join(env.tmp, "place-ca")
	if err := cluster.Init(ca); err != nil {
		return nil, err
	}
	routes := make([]string, n)
	for i := range routes {
		a, err := freeLoopback()
		if err != nil {
			return nil, err
		}
		routes[i] = a
	}
	var (
		nodes []*cluster.Node
		ids   []*cluster.Identity
	)
	defer func() {
		for _, nd := range nodes {
			nd.Shutdown()
		}
	}()
	for i := range n {
		host, home := fmt.Sprintf("host%d", i+1), filepath.Join(env.tmp, fmt.Sprintf("place-home%d", i+1))
		if err := cluster.Join(ca, home, host, ""); err != nil {
			return nil, err
		}
		id, err := cluster.LoadIdentity(home)
		if err != nil {
			return nil, err
		}
		var others []string
		for j := range n {
			if j != i {
				others = append(others, "nats-route://"+routes[j])
			}
		}
		nd, err := cluster.StartNode(ctx, cluster.NodeConfig{Identity: id, Listen: "127.0.0.1:0", Route: routes[i],
			Routes: others, Log: zerolog.Nop()})
		if err != nil {
			return nil, err
		}
		nodes, ids = append(nodes, nd), append(ids, id)
	}
	for _, nd := range nodes {
		if err := nd.WaitJetStream(ctx); err != nil {
			return nil, err
		}
	}
	if err := waitUntil(ctx, 30*time.Second, func() bool { // the meta leader counts its peers, the others none
		for _, nd := range nodes {
			if len(nd.ClusterPeers()) == n {
				return true
			}
		}
		return false
	}); err != nil {
		return nil, fmt.Errorf("the meta leader never counted %d peers: %w", n, err)
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	var placements []*cluster.Placement
	var views []*cluster.Hosts
	for i, nd := range nodes {
		conn, err := cluster.Connect(ctx, cluster.ConnConfig{Node: nd, Identity: ids[i], Log: zerolog.Nop()})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		var b *cluster.Buckets
		for b == nil { // a bucket's stream may not have its replicas placed yet while the cluster settles
			if b, err = cluster.OpenBuckets(ctx, conn.JetStream(), n); err != nil {
				if ctx.Err() != nil || !strings.Contains(err.Error(), "unavailable") {
					return nil, err
				}
				b = nil
				time.Sleep(100 * time.Millisecond)
			}
		}
		host := fmt.Sprintf("host%d", i+1)
		hosts := cluster.NewHosts(b.Hosts, cluster.HostsConfig{Log: zerolog.Nop(), Self: func() cluster.HostInfo {
			return cluster.HostInfo{Host: host, Instance: "bench-" + host, Advertise: "127.0.0.1:1", FreeMem: 8 << 30}
		}})
		p := cluster.NewPlacement(b.Placement, hosts, zerolog.Nop())
		wg.Go(func() { hosts.Run(runCtx) })
		wg.Go(func() { p.Run(runCtx) })
		placements, views = append(placements, p), append(views, hosts)
	}
	if err := waitUntil(ctx, 20*time.Second, func() bool {
		return views[0].Alive("host1") && views[0].Alive("host2") && views[0].Alive("host3")
	}); err != nil {
		return nil, fmt.Errorf("host1 never saw the three hosts alive: %w", err)
	}

	samples := make([]time.Duration, 0, placeStores)
	for i := range placeStores {
		t0 := time.Now()
		if _, err := placements[0].Place(ctx, fmt.Sprintf("bench-store-%03d", i), ""); err != nil {
			return nil, err
		}
		samples = append(samples, time.Since(t0))
	}
	counts := placements[0].Counts()
	lo, hi := placeStores, 0
	for _, h := range []string{"host1", "host2", "host3"} {
		lo, hi = min(lo, counts[h]), max(hi, counts[h])
	}
	p50, p95, p99 := percentiles(samples)
	limit := placeStores / n / 10
	return []Row{
		{Group: "cluster", Name: fmt.Sprintf("placement of %d stores over 3 equal hosts: spread (%d/%d/%d)", placeStores,
			counts["host1"], counts["host2"], counts["host3"]), Value: float64(hi - lo), Unit: "stores",
			Budget: fmt.Sprintf("max−min ≤ %d (one per 10)", limit), OK: hi-lo <= limit},
		{Group: "cluster", Name: "placement: one Place by the rule (3-node JetStream)", P50: p50, P95: p95, P99: p99, OK: true},
	}, nil
}

// freeLoopback is a loopback host:port free a moment ago.
func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}
