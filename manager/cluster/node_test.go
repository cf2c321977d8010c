package cluster_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/cluster/clustertest"
)

func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// getEventually reads key through kv until it holds want: a replica may serve a read a moment behind.
func getEventually(t *testing.T, kv jetstream.KeyValue, key, want string) {
	t.Helper()
	var got string
	testkit.WaitFor(t, 10*time.Second, key+" = "+want, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		e, err := kv.Get(ctx, key)
		if err == nil {
			got = string(e.Value())
		}
		return got == want
	})
}

func TestThreeNodesKeepAReplicatedKV(t *testing.T) {
	c := clustertest.Start(t, 3)
	ctx := ctxFor(t, 60*time.Second)
	js1, js3 := c.Connect(t, 0).JetStream(), c.Connect(t, 2).JetStream()
	kv1, err := js1.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "placement", Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv1.Put(ctx, "shop-a", []byte("host1")); err != nil {
		t.Fatal(err)
	}
	kv3, err := js3.KeyValue(ctx, "placement")
	if err != nil {
		t.Fatal(err)
	}
	getEventually(t, kv3, "shop-a", "host1")
	if got := c.Hosts[0].Node.RoutedHosts(); !slices.Equal(got, []string{"host2", "host3"}) {
		t.Errorf("host1 routes to %v; want host2 and host3", got)
	}

	c.Kill(1)
	// The stream's leader may have been host2: a put waits for the two left to elect one, then each succeeds.
	testkit.WaitFor(t, 20*time.Second, "a put with host2 down", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := kv1.Put(ctx, "shop-a", []byte("host3"))
		return err == nil
	})
	for i := range 5 {
		if _, err := kv1.Put(ctx, "shop-b", []byte{byte('0' + i)}); err != nil {
			t.Fatalf("put %d with 2 of 3 nodes up: %v", i, err)
		}
	}
	getEventually(t, kv3, "shop-a", "host3")
	getEventually(t, kv3, "shop-b", "4")
}

func TestSingleNodeServesJetStream(t *testing.T) {
	c := clustertest.Start(t, 1)
	ctx := ctxFor(t, 30*time.Second)
	kv, err := c.Connect(t, 0).JetStream().CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "hosts"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "host1", []byte("alive")); err != nil {
		t.Fatal(err)
	}
	getEventually(t, kv, "host1", "alive")
	if got := c.Hosts[0].Node.RoutedHosts(); len(got) != 0 {
		t.Errorf("a lone node routes to %v", got)
	}
}

// The node takes no client without a certificate of the cluster's CA: not one that speaks plaintext, not
// one with no certificate, not one with another cluster's.
func TestNodeRefusesClientsOutsideTheCluster(t *testing.T) {
	c := clustertest.Start(t, 1)
	h := c.Hosts[0]
	addr := strings.TrimPrefix(h.ClientURL, "tls://")

	t.Run("plaintext", func(t *testing.T) {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		r := bufio.NewReader(conn)
		info, _ := r.ReadString('\n')
		if !strings.Contains(info, `"tls_required":true`) {
			t.Errorf("the node's greeting %q does not require TLS", info)
		}
		conn.Write([]byte("CONNECT {\"verbose\":false}\r\nPING\r\nSUB > 1\r\n"))
		rest, _ := r.ReadString(0) // until the node hangs up
		if strings.Contains(rest, "PONG") || strings.Contains(rest, "+OK") {
			t.Errorf("the node answered a plaintext client: %q", rest)
		}
	})

	other := initCA(t)
	_, stranger := joined(t, other, "host1") // the same name, from another CA
	foreignCert := stranger.ClientTLS()
	foreignCert.RootCAs, foreignCert.ServerName = h.Identity.CAPool(), "host1"
	refused := []struct {
		name string
		tls  *tls.Config
	}{
		{"no certificate", &tls.Config{RootCAs: h.Identity.CAPool(), ServerName: "host1", MinVersion: tls.VersionTLS13}},
		{"another CA's certificate", foreignCert},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			nc, err := nats.Connect(h.ClientURL, nats.Secure(tt.tls), nats.Timeout(5*time.Second), nats.NoReconnect())
			if err == nil {
				nc.Close()
				t.Fatalf("the node took a client with %s", tt.name)
			}
		})
	}

	t.Run("cluster.Connect as a stranger", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		// It trusts the node (VIBE_CLUSTER_CA), so the node is the one that refuses.
		conn, err := cluster.Connect(ctx, cluster.ConnConfig{URLs: []string{h.ClientURL}, Identity: stranger,
			CA: filepath.Join(h.Home, cluster.HomeDir, cluster.CAFile)})
		if err == nil {
			conn.Close()
			t.Fatal("the node took a connection from another cluster's host")
		}
		// The refusal is the node's: our side verified the node's certificate.
		var verify *tls.CertificateVerificationError
		if !errors.Is(err, context.DeadlineExceeded) || errors.As(err, &verify) {
			t.Errorf("Connect = %v; want it to give up when its context ends, the node having refused it", err)
		}
	})
}

// syncBuffer is a log sink that the test reads while the node writes.
type syncBuffer struct {
	mu sync.Mutex // mu guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A node of another CA that dials the cluster's routes, and even trusts the cluster's CA, is refused by
// the cluster's nodes: the cluster keeps its three members.
func TestForeignNodeCannotJoinTheRoutes(t *testing.T) {
	c := clustertest.Start(t, 3)
	other := initCA(t)
	_, foreign := joined(t, other, "host4")
	var routes []string
	for _, h := range c.Hosts {
		routes = append(routes, h.RouteURL)
	}
	var theirs syncBuffer
	node, err := cluster.StartNode(ctxFor(t, 30*time.Second), cluster.NodeConfig{
		Identity: foreign.AlsoTrusting(c.Hosts[0].Identity), Listen: "127.0.0.1:0", Route: "127.0.0.1:0",
		Routes: routes, Log: zerolog.New(&theirs).Level(zerolog.DebugLevel)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(node.Shutdown)
	// The foreign node trusts our CA, so its side of each handshake completes; then our node refuses its
	// certificate and hangs up, which the foreign node logs (at debug) per route it dialled.
	testkit.WaitFor(t, 20*time.Second, "each member to hang up on the foreign node", func() bool {
		lines := strings.Split(theirs.String(), "\n")
		for _, r := range routes {
			addr := strings.TrimPrefix(r, "nats-route://") + " - rid:"
			if !slices.ContainsFunc(lines, func(l string) bool {
				return strings.Contains(l, addr) && strings.Contains(l, "Router connection closed")
			}) {
				return false
			}
		}
		return true
	})
	for _, h := range c.Hosts {
		if got := h.Node.RoutedHosts(); slices.Contains(got, "host4") || len(got) != 2 {
			t.Errorf("%s routes to %v; want the two other members only", h.Name, got)
		}
		if got := h.Node.ClusterPeers(); got != nil && !slices.Equal(got, []string{"host1", "host2", "host3"}) {
			t.Errorf("the meta leader %s counts peers %v; want host1..host3", h.Name, got)
		}
	}
	if got := node.RoutedHosts(); len(got) != 0 {
		t.Errorf("the foreign node routes to %v", got)
	}
}
