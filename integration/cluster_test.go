//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/cluster"
)

// freeLoopback is a loopback host:port free a moment ago.
func freeLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// clusterOf starts n managers, each on a home of its own joined to one new cluster (vibe-browser cluster init
// and join, as a person would) and running an embedded NATS node routed to the others: the three-host recipe
// of the README on loopback. They start together, since none is ready before a majority of nodes is up.
func clusterOf(t *testing.T, n int) []*managed {
	t.Helper()
	bins := builtBinaries(t)
	ca := filepath.Join(t.TempDir(), "ca")
	nodes, routes, doors := make([]string, n), make([]string, n), make([]string, n)
	for i := range n {
		nodes[i], routes[i], doors[i] = freeLoopback(t), freeLoopback(t), freeLoopback(t)
	}
	var ms []*managed
	for i := range n {
		home := settledTempDir(t)
		var others []string
		for j := range n {
			if j != i {
				others = append(others, "nats-route://"+routes[j])
			}
		}
		m := prepareManager(t, bins, home, fmt.Sprintf("VIBE_HOST=host%d", i+1), "VIBE_CLUSTER_NODE="+nodes[i],
			"VIBE_CLUSTER_NODE_ROUTE="+routes[i], "VIBE_CLUSTER_ROUTES="+strings.Join(others, ","), "VIBE_ADVERTISE="+doors[i])
		if i == 0 {
			m.cli("cluster", "init", ca)
		}
		m.cli("cluster", "join", ca, "--host", fmt.Sprintf("host%d", i+1), "--advertise", doors[i])
		ms = append(ms, m)
	}
	for _, m := range ms {
		m.launch()
	}
	for _, m := range ms {
		m.awaitHealth()
	}
	return ms
}

// hostsAlive is the names of the hosts m's status says are alive.
func hostsAlive(t *testing.T, m *managed) []string {
	t.Helper()
	st, err := m.client.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var alive []string
	for _, h := range st.Hosts {
		if h.Alive {
			alive = append(alive, h.Name)
		}
	}
	return alive
}

// leaseOf reads store's lease from the cluster's own bucket, through host i's node, as host i: its holder, or
// "" when there is none.
func leaseOf(t *testing.T, m *managed, store string) string {
	t.Helper()
	id, err := cluster.LoadIdentity(m.home)
	if err != nil {
		t.Fatal(err)
	}
	node := ""
	for _, kv := range m.env {
		if v, ok := strings.CutPrefix(kv, "VIBE_CLUSTER_NODE="); ok {
			node = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := cluster.Connect(ctx, cluster.ConnConfig{URLs: []string{"tls://" + node}, Identity: id, Log: testkit.Log(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	kv, err := conn.JetStream().KeyValue(ctx, cluster.BucketLeases)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, store)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(e.Value())
}

// Three hosts form one cluster: each one's status lists all three alive. A store started on host1 is placed
// there and runs under host1's lease; host1 quitting gives the lease back at once, and the others see host1
// dead once its heartbeat has been still for the host TTL.
func TestClusterOfThreeHosts(t *testing.T) {
	ms := clusterOf(t, 3)
	for i, m := range ms {
		testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("host%d sees the three hosts alive", i+1), func() bool {
			return len(hostsAlive(t, m)) == 3
		})
	}
	h1 := ms[0]
	var st api.Store
	if err := json.Unmarshal([]byte(h1.cli("store", "add", "Shop One", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	h1.cli("browser", "start", "shop-one")
	status, err := h1.client.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(status.Stores) != 1 || status.Stores[0].Host != "host1" || status.Host != "host1" {
		t.Fatalf("host1's status: host %q, stores %+v; want shop-one placed on host1", status.Host, status.Stores)
	}
	if lease := leaseOf(t, ms[1], st.ID); !strings.Contains(lease, `"host":"host1"`) {
		t.Fatalf("the lease of shop-one, read through host2: %q; want host1's", lease)
	}

	if err := h1.stop(); err != nil {
		t.Fatalf("host1 quit: %v", err)
	}
	if lease := leaseOf(t, ms[1], st.ID); lease != "" {
		t.Errorf("the lease of shop-one after host1 quit: %q; want it given back", lease)
	}
	testkit.WaitFor(t, 3*cluster.DefaultHostTTL, "host2 and host3 see host1 dead", func() bool {
		a2, a3 := hostsAlive(t, ms[1]), hostsAlive(t, ms[2])
		return len(a2) == 2 && len(a3) == 2 && !slices.Contains(a2, "host1") && !slices.Contains(a3, "host1")
	})
}
