//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/cluster"
)

// movedEvents are the store_moved events of store id on m.
func movedEvents(t *testing.T, m *managed, id string) []api.Event {
	t.Helper()
	evs, err := m.client.Events(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []api.Event
	for _, ev := range evs {
		if ev.Kind == api.EventStoreMoved && ev.StoreID == id {
			out = append(out, ev)
		}
	}
	return out
}

// `store move` run on host1 moves a store of host2 to host3 (SPEC §19 "Move and failover"): host2 stops its
// browser cleanly and hands the store over with its login and its lease, so the agent's next ensure and call
// reach host3 logged in, with no lease lapse; the browser runs on host3 only. The moves the rules forbid are
// refused, naming the rule.
func TestClusterMoveKeepsTheLogin(t *testing.T) {
	ms := clusterOf(t, 3)
	ms[0].cli("store", "add", "Move Shop", "--host", "host2")
	shop := storeNamedOn(t, ms[0], "Move Shop")
	storeNamedOn(t, ms[2], "Move Shop")
	site := loginSite(t)
	v := randomValue(t)
	c := dialRaw(t, capability(t, ms[0], shop, taskA).CDPWS)
	c.createPage(site.URL + "/login?v=" + v)
	old := browserOf(t, ms[1], shop.ID)
	if old.Status != api.StatusRunning {
		t.Fatalf("Move Shop's browser on host2: %q; want it running", old.Status)
	}

	began := time.Now()
	var moved api.StoreMoved
	if err := json.Unmarshal([]byte(ms[0].cli("store", "move", "Move Shop", "--to", "host3", "--json")), &moved); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	if moved.From != "host2" || moved.To != "host3" || !moved.Stopped || moved.SnapshotAt.IsZero() || moved.CheckpointAt.IsZero() {
		t.Errorf("store move answered %+v; want from host2 to host3, its browser stopped, with a snapshot and a checkpoint", moved)
	}
	if !gone(old.PID) {
		t.Errorf("host2's browser (pid %d) still runs after the move", old.PID)
	}
	if p := bucketValue(t, ms[0], cluster.BucketPlacement, shop.ID); !strings.Contains(p, `"host":"host3"`) {
		t.Errorf("Move Shop's placement after the move: %s; want host3", p)
	}
	if l := bucketValue(t, ms[0], cluster.BucketLeases, shop.ID); l != "" {
		t.Errorf("Move Shop's lease after the move: %s; want none (given back, so host3 need not wait for a lapse)", l)
	}

	// The agent's next ensure and call, from host1: host3, logged in, no lease lapse waited for.
	resp := capability(t, ms[0], shop, taskA)
	ensured := time.Since(began)
	c2 := dialRaw(t, resp.CDPWS)
	_, s := c2.createPage(site.URL + "/whoami")
	got, err := c2.evaluate(s, "document.getElementById('c').textContent")
	if err != nil {
		t.Fatal(err)
	}
	back := time.Since(began)
	if !strings.Contains(string(got), "sid-"+v) {
		t.Errorf("after the move the site sees cookies %s; want the login sid-%s", got, v)
	}
	if back >= cluster.DefaultLeaseTTL {
		t.Errorf("the store answered on host3 %s after the move began; want well under the lease TTL %s (no lapse)",
			back, cluster.DefaultLeaseTTL)
	}
	if b := browserOf(t, ms[2], shop.ID); b.Status != api.StatusRunning {
		t.Errorf("Move Shop's browser on host3: %q; want it running there", b.Status)
	}
	if l := bucketValue(t, ms[0], cluster.BucketLeases, shop.ID); !strings.Contains(l, `"host":"host3"`) {
		t.Errorf("Move Shop's lease after the next call: %s; want host3's", l)
	}
	for _, m := range ms[:2] {
		if b := browserOf(t, m, shop.ID); b.Status == api.StatusRunning {
			t.Errorf("Move Shop's browser runs on %s too (pid %d)", hostOf(m), b.PID)
		}
	}
	for _, m := range ms[1:] {
		if evs := movedEvents(t, m, shop.ID); len(evs) != 1 || !strings.Contains(evs[0].Message, "from host host2 to host host3") {
			t.Errorf("%s's store_moved events: %+v; want one, from host2 to host3", hostOf(m), evs)
		}
	}
	t.Logf("store move took %s; the next ensure answered %s and the store answered on host3, logged in, %s after the move began",
		took.Round(time.Millisecond), ensured.Round(time.Millisecond), back.Round(time.Millisecond))

	// The refusals, each naming its rule.
	single := startManager(t)
	single.cli("store", "add", "Lone Shop")
	refusals := []struct {
		name string
		m    *managed
		args []string
		want string
	}{
		{"unknown host", ms[0], []string{"Move Shop", "--to", "host9"}, "no host host9 in the cluster"},
		{"the host it is on", ms[0], []string{"Move Shop", "--to", "host3"}, "is on host host3 already"},
		{"no such store", ms[0], []string{"No Shop", "--to", "host2"}, `no store named "No Shop"`},
		{"single host", single, []string{"Lone Shop", "--to", "host2"}, "this manager runs on a single host"},
	}
	for _, r := range refusals {
		out, err := r.m.cliErr(append([]string{"store", "move"}, r.args...)...)
		if err == nil || !strings.Contains(out, r.want) {
			t.Errorf("%s: store move %s = %v, %q; want a refusal saying %q", r.name, strings.Join(r.args, " "), err, out, r.want)
		}
	}
	// A dead host: host2 killed, seen dead by host1.
	if err := ms[1].cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	ms[1].cmd.Wait()
	testkit.WaitFor(t, 3*cluster.DefaultHostTTL, "host1 sees host2 dead", func() bool {
		for _, h := range hostsAlive(t, ms[0]) {
			if h == "host2" {
				return false
			}
		}
		return true
	})
	if out, err := ms[0].cliErr("store", "move", "Move Shop", "--to", "host2"); err == nil || !strings.Contains(out, "host host2 is not alive") {
		t.Errorf("dead host: store move Move Shop --to host2 = %v, %q; want a refusal saying host host2 is not alive", err, out)
	}
}
