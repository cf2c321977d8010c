package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/cluster/clustertest"
)

// testCluster is a real cluster of n embedded nodes (clustertest); each host's connection to its node goes
// through a cut, a relay the test can sever, as a host cut off from the cluster is.
type testCluster struct {
	*clustertest.Cluster
	cuts []*testkit.Severable
}

func startCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	c := &testCluster{Cluster: clustertest.Start(t, n)}
	for _, h := range c.Hosts {
		c.cuts = append(c.cuts, testkit.NewSeverable(t, strings.TrimPrefix(h.ClientURL, "tls://")))
	}
	return c
}

// js is a JetStream of host i, over its cut: it never goes round the cut to another node.
func (c *testCluster) js(t *testing.T, i int) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect("tls://"+c.cuts[i].Addr, nats.Secure(c.Hosts[i].Identity.ClientTLS()),
		nats.IgnoreDiscoveredServers(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.Timeout(time.Second))
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
		b, err := cluster.OpenBuckets(ctx, c.js(t, i), len(c.Hosts))
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
	c.cuts[i].Sever()
}
