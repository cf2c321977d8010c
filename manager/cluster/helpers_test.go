package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"vibebrowser/manager/cluster"
)

// testCluster is n embedded JetStream nodes on loopback; each host's client connection goes through a cut
// (a relay the test can sever, as a host cut off from the cluster is).
type testCluster struct {
	nodes []*server.Server
	cuts  []*cut
}

func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	routePorts := make([]int, n)
	for i := range n {
		routePorts[i] = freePort(t)
	}
	c := &testCluster{}
	for i := range n {
		opts := &server.Options{ServerName: fmt.Sprint("n", i+1), Host: "127.0.0.1", Port: -1, JetStream: true,
			StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
		if n > 1 {
			opts.Cluster = server.ClusterOpts{Name: "test", Host: "127.0.0.1", Port: routePorts[i], NoAdvertise: true} // clients stay behind their cut
			for j := range n {
				if j != i {
					opts.Routes = append(opts.Routes, server.RoutesFromStr(fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[j]))...)
				}
			}
		}
		s, err := server.NewServer(opts)
		if err != nil {
			t.Fatal(err)
		}
		go s.Start()
		t.Cleanup(s.Shutdown)
		c.nodes = append(c.nodes, s)
	}
	for i, s := range c.nodes {
		if !s.ReadyForConnections(10 * time.Second) {
			t.Fatalf("node %d not ready", i)
		}
		c.cuts = append(c.cuts, newCut(t, s.Addr().String()))
	}
	// JetStream is ready once a bucket can be made.
	js := c.js(t, 0)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.AccountInfo(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("JetStream never ready: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return c
}

// js is a JetStream of host i, over its cut.
func (c *testCluster) js(t *testing.T, i int) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect("nats://"+c.cuts[i].addr, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.Timeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// buckets opens the cluster's buckets as host i.
func buckets(t *testing.T, c *testCluster, i int) *cluster.Buckets {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		b, err := cluster.OpenBuckets(ctx, c.js(t, i), len(c.nodes))
		if err == nil {
			return b
		}
		if ctx.Err() != nil || !strings.Contains(err.Error(), "unavailable") {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cutOff severs host i from the cluster: its connections end and new ones are refused.
func cutOff(t *testing.T, c *testCluster, i int) {
	t.Helper()
	c.cuts[i].sever()
}

// cut relays a host's connections to its node until severed.
type cut struct {
	addr string
	ln   net.Listener
	mu   sync.Mutex
	cut  bool
	open []net.Conn
}

func newCut(t *testing.T, to string) *cut {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	k := &cut{addr: ln.Addr().String(), ln: ln}
	t.Cleanup(func() { ln.Close(); k.sever() })
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", to)
			k.mu.Lock()
			if err != nil || k.cut {
				k.mu.Unlock()
				a.Close()
				if b != nil {
					b.Close()
				}
				continue
			}
			k.open = append(k.open, a, b)
			k.mu.Unlock()
			go func() { io.Copy(a, b); a.Close() }()
			go func() { io.Copy(b, a); b.Close() }()
		}
	}()
	return k
}

func (k *cut) sever() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cut = true
	for _, c := range k.open {
		c.Close()
	}
	k.open = nil
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
