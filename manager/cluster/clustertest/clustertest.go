// Package clustertest starts real NATS JetStream clusters of embedded nodes on loopback, with their CA and
// joined homes, for tests.
package clustertest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/cluster"
)

// formWithin bounds how long a cluster may take to start and elect its meta leader.
const formWithin = 30 * time.Second

// Cluster is a running test cluster: a CA and one host per node.
type Cluster struct {
	CA    string  // the CA's folder (cluster init)
	Hosts []*Host // Hosts[i] is named host<i+1>

	mu sync.Mutex // mu guards the fields below
	// killed[i] is whether Hosts[i]'s node was shut down.
	killed []bool
}

// Host is one host of a test cluster.
type Host struct {
	Name      string            // host1, host2, …
	Home      string            // its home, joined to the cluster
	Identity  *cluster.Identity // its certificate and the cluster's secret
	Node      *cluster.Node     // its embedded node
	ClientURL string            // where its node takes clients
	RouteURL  string            // where its node takes routes; "" for a node on its own
}

// Start makes a CA, n homes joined as host1..hostN and n embedded nodes on loopback with full-mesh routes,
// and returns once JetStream has a meta leader that knows every node (with n = 1, a node on its own: no
// routes, no RouteURL). The nodes stop at the test's end.
func Start(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{CA: filepath.Join(t.TempDir(), "ca"), killed: make([]bool, n)}
	if err := cluster.Init(c.CA); err != nil {
		t.Fatal(err)
	}
	// Routes must know each other's ports before any node starts; clients need not, so theirs are any free one.
	routes := make([]string, n)
	for i := range n {
		routes[i] = freeAddr(t)
	}
	ctx, cancel := context.WithTimeout(context.Background(), formWithin)
	defer cancel()
	for i := range n {
		h := &Host{Name: "host" + strconv.Itoa(i+1), Home: filepath.Join(t.TempDir(), "home")}
		if err := cluster.Join(c.CA, h.Home, h.Name, ""); err != nil {
			t.Fatal(err)
		}
		id, err := cluster.LoadIdentity(h.Home)
		if err != nil {
			t.Fatal(err)
		}
		var others []string
		for j := range n {
			if j != i {
				others = append(others, "nats-route://"+routes[j])
			}
		}
		node, err := cluster.StartNode(ctx, cluster.NodeConfig{Identity: id, Listen: "127.0.0.1:0", Route: routes[i],
			Routes: others, Log: nodeLog(t, h.Name)})
		if err != nil {
			t.Fatal(err)
		}
		h.Identity, h.Node, h.ClientURL, h.RouteURL = id, node, node.ClientURL(), node.RouteURL()
		c.Hosts = append(c.Hosts, h)
		t.Cleanup(func() { c.Kill(i) })
	}
	for _, h := range c.Hosts {
		if err := h.Node.WaitJetStream(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.waitPeers(ctx, n); err != nil {
		t.Fatal(err)
	}
	return c
}

// waitPeers waits until the meta leader counts n peers online, itself included: only then can a stream of
// n replicas be placed.
func (c *Cluster) waitPeers(ctx context.Context, n int) error {
	for {
		for _, h := range c.Hosts {
			if len(h.Node.ClusterPeers()) == n {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the cluster's meta leader never counted %d peers: %w", n, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// nodeLog is a node's logger in the test's log: warnings and errors only, since a forming cluster's debug
// lines are many.
func nodeLog(t testing.TB, host string) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel).With().Str("host", host).Logger()
}

// freeAddr is a loopback address with a port free a moment ago.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Kill shuts node i (Hosts[i]) down and waits until it has; killing it again does nothing.
func (c *Cluster) Kill(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.killed[i] {
		return
	}
	c.killed[i] = true
	c.Hosts[i].Node.Shutdown()
}

// Connect connects to node i as host i (Hosts[i]'s identity), and closes the connection at the test's end.
func (c *Cluster) Connect(t testing.TB, i int) *cluster.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h := c.Hosts[i]
	conn, err := cluster.Connect(ctx, cluster.ConnConfig{Node: h.Node, Identity: h.Identity, Log: nodeLog(t, h.Name)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}
