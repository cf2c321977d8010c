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
// of the README on loopback. They start together, since none is ready before a majority of nodes is up; it
// returns once each host sees every host alive.
func clusterOf(t *testing.T, n int) []*managed {
	t.Helper()
	ms, _ := clusterWithCA(t, n)
	return ms
}

// clusterWithCA is clusterOf, with the cluster's CA folder (for one more host to join).
func clusterWithCA(t *testing.T, n int) ([]*managed, string) {
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
		// A manager answers once the cluster formed: its nodes elect JetStream's leader (a manager waits up to
		// a minute for a majority of them), which a loaded machine slows.
		m.awaitHealthWithin(90 * time.Second)
	}
	for i, m := range ms {
		testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("host%d sees the %d hosts alive", i+1, n), func() bool {
			return len(hostsAlive(t, m)) == n
		})
	}
	return ms, ca
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

// bucketValue reads key from one of the cluster's buckets, through host m's node, as m: its value, or ""
// when there is none.
func bucketValue(t *testing.T, m *managed, bucket, key string) string {
	t.Helper()
	v, err := readBucket(t, m, bucket, key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// clusterConn connects to host m's node as m.
func clusterConn(ctx context.Context, t *testing.T, m *managed) (*cluster.Conn, error) {
	t.Helper()
	id, err := cluster.LoadIdentity(m.home)
	if err != nil {
		return nil, err
	}
	node := ""
	for _, kv := range m.env {
		if v, ok := strings.CutPrefix(kv, "VIBE_CLUSTER_NODE="); ok {
			node = v
		}
	}
	return cluster.Connect(ctx, cluster.ConnConfig{URLs: []string{"tls://" + node}, Identity: id, Log: testkit.Log(t)})
}

// readBucket is bucketValue's read, for a caller that tries again: a read while the bucket's stream elects a
// new leader (its leader's host just died) goes unanswered until its bound.
func readBucket(t *testing.T, m *managed, bucket, key string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := clusterConn(ctx, t, m)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	kv, err := conn.JetStream().KeyValue(ctx, bucket)
	if err != nil {
		return "", err
	}
	e, err := kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return string(e.Value()), nil
}

// hostOf is m's host name in the cluster (its VIBE_HOST).
func hostOf(m *managed) string {
	for _, kv := range m.env {
		if v, ok := strings.CutPrefix(kv, "VIBE_HOST="); ok {
			return v
		}
	}
	return ""
}

// storeOn is the store id as m's status shows it, and whether it shows it.
func storeOn(t *testing.T, m *managed, id string) (api.Store, bool) {
	t.Helper()
	st, err := m.client.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st.Stores {
		if s.ID == id {
			return s, true
		}
	}
	return api.Store{}, false
}

// startedStore adds a store on m, placed on m, and starts its browser: the store and its browser as status shows them.
func startedStore(t *testing.T, m *managed, name string) (api.Store, api.Browser) {
	t.Helper()
	var st api.Store
	if err := json.Unmarshal([]byte(m.cli("store", "add", name, "--host", hostOf(m), "--json")), &st); err != nil {
		t.Fatal(err)
	}
	m.cli("browser", "start", st.Slug)
	status, err := m.client.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range status.Stores {
		if s.ID == st.ID {
			return s, status.Browsers[i]
		}
	}
	t.Fatalf("store %s not in the status", name)
	return api.Store{}, api.Browser{}
}

// Three hosts form one cluster: each one's status lists all three alive. A store started on a host is placed
// there and runs under that host's lease. A host quitting gives its leases back at once. A host whose manager
// is killed -9 has its browser stopped by the keeper well before the lease can lapse (no two browsers of one
// store, ever), the others see it dead once its heartbeat has been still for the host TTL, and its store's
// placement moves to a living host.
func TestClusterOfThreeHosts(t *testing.T) {
	ms := clusterOf(t, 3)
	h1, h2 := ms[0], ms[1]
	one, b1 := startedStore(t, h1, "Shop One")
	if one.Host != "host1" {
		t.Fatalf("shop-one on host1's status: placed on %q; want host1", one.Host)
	}
	if lease := bucketValue(t, h2, cluster.BucketLeases, one.ID); !strings.Contains(lease, `"host":"host1"`) {
		t.Fatalf("the lease of shop-one, read through host2: %q; want host1's", lease)
	}
	two, _ := startedStore(t, h2, "Shop Two")
	if err := h2.stop(); err != nil {
		t.Fatalf("host2 quit: %v", err)
	}
	if lease := bucketValue(t, ms[2], cluster.BucketLeases, two.ID); lease != "" {
		t.Errorf("the lease of shop-two after host2 quit: %q; want it given back", lease)
	}
	// Its login is the cluster's: the snapshot of its stop and its checkpoint, read through host3.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := clusterConn(ctx, t, ms[2])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	logins, err := cluster.OpenLogins(ctx, conn.JetStream(), 3, 5)
	if err != nil {
		t.Fatal(err)
	}
	if _, at, rc, err := logins.NewestSnapshot(ctx, two.ID); err != nil {
		t.Errorf("shop-two's snapshot on the cluster after host2 quit: %v; want the one its stop took", err)
	} else {
		rc.Close()
		if time.Since(at) > time.Minute {
			t.Errorf("shop-two's newest snapshot on the cluster is from %s; want its stop's", at)
		}
	}
	if _, _, err := logins.Jar(ctx, two.ID); err != nil {
		t.Errorf("shop-two's checkpoint on the cluster: %v; want its stop's", err)
	}
	h2.launch() // back, for the cluster to keep its majority when host1 dies
	h2.awaitHealth()
	testkit.WaitFor(t, 30*time.Second, "host3 sees host2 back", func() bool { return len(hostsAlive(t, ms[2])) == 3 })

	killedAt := time.Now()
	if err := h1.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	h1.cmd.Wait()
	testkit.WaitFor(t, cluster.DefaultLeaseTTL/2, "host1's browser gone after its manager was killed", func() bool {
		return gone(b1.PID)
	})
	if d := time.Since(killedAt); d > cluster.DefaultLeaseTTL/2 {
		t.Errorf("host1's browser outlived its manager by %s; want it gone within half the lease TTL", d)
	}
	testkit.WaitFor(t, 3*cluster.DefaultHostTTL, "shop-one's placement moves from host1 to a living host", func() bool {
		p, err := readBucket(t, ms[2], cluster.BucketPlacement, one.ID)
		return err == nil && strings.Contains(p, `"host":"host2"`) || strings.Contains(p, `"host":"host3"`)
	})
	for _, m := range ms[1:] {
		testkit.WaitFor(t, 2*cluster.DefaultHostTTL, "each living host sees host2 and host3 alive, host1 not", func() bool {
			return slices.Equal(hostsAlive(t, m), []string{"host2", "host3"})
		})
	}
}

// The stores are the cluster's: a store added on host1 with --host host3 shows on every host's status with its
// id, slug and token, placed on host3, each host with a port of its own; a change on host2 reaches host1 and
// host3; a removal on host3 removes it everywhere. A store added with no --host is placed by the rule, and every
// host agrees where. A store whose name another store of the cluster has is refused, naming that store.
func TestClusterStoresEverywhere(t *testing.T) {
	ms := clusterOf(t, 3)
	h1, h2, h3 := ms[0], ms[1], ms[2]
	var far api.Store
	if err := json.Unmarshal([]byte(h1.cli("store", "add", "Shop Far", "--host", "host3", "--json")), &far); err != nil {
		t.Fatal(err)
	}
	token := far.CDPWS[strings.LastIndex(far.CDPWS, "/")+1:]
	for i, m := range ms {
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("host%d shows shop-far placed on host3", i+1), func() bool {
			s, ok := storeOn(t, m, far.ID)
			return ok && s.Host == "host3"
		})
		s, _ := storeOn(t, m, far.ID)
		if s.Slug != far.Slug || !strings.HasSuffix(s.CDPWS, "/"+token) || s.ProxyPort == 0 {
			t.Errorf("shop-far on host%d = slug %s, endpoint %s, port %d; want slug %s, token %s and a port of its own",
				i+1, s.Slug, s.CDPWS, s.ProxyPort, far.Slug, token)
		}
	}
	if raw := bucketValue(t, h2, cluster.BucketStores, far.ID); raw == "" || strings.Contains(raw, token) {
		t.Errorf("shop-far's record in the stores bucket: %q; want it there, its token sealed", raw)
	}

	h2.cli("store", "set", far.Slug, "--timezone", "Asia/Tokyo")
	for _, m := range []*managed{h1, h3} {
		testkit.WaitFor(t, 10*time.Second, hostOf(m)+" has shop-far's time zone set on host2", func() bool {
			s, ok := storeOn(t, m, far.ID)
			return ok && s.Timezone == "Asia/Tokyo"
		})
	}

	h3.cli("store", "rm", far.Slug)
	for _, m := range []*managed{h1, h2} {
		testkit.WaitFor(t, 10*time.Second, hostOf(m)+" has shop-far removed on host3", func() bool {
			_, ok := storeOn(t, m, far.ID)
			return !ok
		})
	}
	if p := bucketValue(t, h1, cluster.BucketPlacement, far.ID); p != "" {
		t.Errorf("shop-far's placement after its removal: %q; want none", p)
	}

	var ruled api.Store
	if err := json.Unmarshal([]byte(h2.cli("store", "add", "Shop Ruled", "--json")), &ruled); err != nil {
		t.Fatal(err)
	}
	placed := bucketValue(t, h1, cluster.BucketPlacement, ruled.ID)
	var where struct{ Host string }
	if err := json.Unmarshal([]byte(placed), &where); err != nil || !slices.Contains([]string{"host1", "host2", "host3"}, where.Host) {
		t.Fatalf("shop-ruled's placement: %q; want one of the three hosts", placed)
	}
	for i, m := range ms {
		testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("host%d shows shop-ruled on %s", i+1, where.Host), func() bool {
			s, ok := storeOn(t, m, ruled.ID)
			return ok && s.Host == where.Host
		})
	}

	out, err := h3.cliErr("store", "add", "Shop Ruled")
	if err == nil || !strings.Contains(out, ruled.ID) || !strings.Contains(out, "Shop Ruled") {
		t.Errorf("a second Shop Ruled added on host3: %v: %s; want it refused naming the cluster's (id %s)", err, out, ruled.ID)
	}
	if _, err := h3.cliErr("store", "add", "Shop Elsewhere", "--host", "host9"); err == nil {
		t.Error("a store added with --host host9, a host the cluster does not know: no error; want it refused")
	}
	if out, _ := h3.cliErr("store", "list"); strings.Contains(out, "Shop Elsewhere") {
		t.Errorf("host3's stores after a refused add: %s; want no Shop Elsewhere", out)
	}
}
