package cluster_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/cluster/clustertest"
)

// A host that connects by VIBE_CLUSTER (every node's URL, the cluster's CA) names its connection for
// itself, follows the cluster when its node goes, and logs the disconnect and the reconnect once each.
func TestConnFollowsTheClusterAndSaysSoOnce(t *testing.T) {
	c := clustertest.Start(t, 3)
	var urls []string
	for _, h := range c.Hosts {
		urls = append(urls, h.ClientURL)
	}
	var log syncBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := cluster.Connect(ctx, cluster.ConnConfig{URLs: urls, Identity: c.Hosts[0].Identity,
		CA:  filepath.Join(c.Hosts[0].Home, cluster.HomeDir, cluster.CAFile),
		Log: zerolog.New(&log)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	nc := conn.NATS()
	if nc.Opts.Name != "host1" {
		t.Errorf("connection name %q; want host1", nc.Opts.Name)
	}
	if !nc.TLSRequired() {
		t.Error("the connection does not say TLS is required")
	}
	first := nc.ConnectedServerName()
	for i, h := range c.Hosts {
		if h.Name == first {
			c.Kill(i)
		}
	}
	testkit.WaitFor(t, 15*time.Second, "a reconnect to another node", func() bool {
		return nc.IsConnected() && nc.ConnectedServerName() != first
	})
	testkit.WaitFor(t, 5*time.Second, "the reconnect to be logged", func() bool {
		return strings.Contains(log.String(), "reconnected to the cluster")
	})
	if got := strings.Count(log.String(), "disconnected from the cluster"); got != 1 {
		t.Errorf("the disconnect was logged %d times; want once:\n%s", got, log.String())
	}
	if got := strings.Count(log.String(), "reconnected to the cluster"); got != 1 {
		t.Errorf("the reconnect was logged %d times; want once:\n%s", got, log.String())
	}
	// The node gone may have been the meta leader: a JetStream request gets no answer until the two left
	// elect another, so each try has its own short deadline.
	testkit.WaitFor(t, 30*time.Second, "a KV bucket made with one node down", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		kv, err := conn.JetStream().CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "hosts", Replicas: 2})
		if err != nil {
			return false
		}
		_, err = kv.Put(ctx, "host1", []byte("alive"))
		return err == nil
	})
}

// A server that offers no TLS is refused, even under a nats:// URL.
func TestConnRefusesAServerWithoutTLS(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: server.RANDOM_PORT, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the plaintext server did not start")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	conn, err := cluster.Connect(ctx, cluster.ConnConfig{URLs: []string{srv.ClientURL()}, Host: "host1"})
	if err == nil {
		conn.Close()
		t.Fatalf("Connect(%s) took a server without TLS", srv.ClientURL())
	}
	if !errors.Is(err, nats.ErrSecureConnWanted) {
		t.Errorf("Connect(%s) = %v; want %v", srv.ClientURL(), err, nats.ErrSecureConnWanted)
	}
}
