//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/cluster"
)

// storeNamedOn waits until m knows the store named name (the cluster's stores reach every host) and returns it.
func storeNamedOn(t *testing.T, m *managed, name string) api.Store {
	t.Helper()
	var found api.Store
	testkit.WaitFor(t, 30*time.Second, "the store "+name+" to reach the host", func() bool {
		st, err := m.client.Status(context.Background())
		if err != nil {
			return false
		}
		for _, s := range st.Stores {
			if s.Name == name && s.Host != "" {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

// browserOf is the state of key's browser on m itself, as m's status says. m's status shows a browser another
// host runs too (SPEC §19 "One pane", its host named): that one is not m's, and reads as stopped here.
func browserOf(t *testing.T, m *managed, key string) api.Browser {
	t.Helper()
	st, err := m.client.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range st.Browsers {
		if b.Key == key && b.Host != "" && b.Host != st.Host {
			return api.Browser{Key: key, Slug: b.Slug, Status: api.StatusStopped, Host: b.Host}
		}
		if b.Key == key {
			return b
		}
	}
	return api.Browser{}
}

// An agent on host1 drives a store placed on host3 through the doors (SPEC §19 "Routing"): its capability URL
// is host1's endpoint of the store, its browser runs on host3 only, a task of host2 on the same store sees none
// of its tabs, and the store token's URL is never served through a door.
func TestClusterDoorCarriesAnAgent(t *testing.T) {
	ms := clusterOf(t, 3)
	ms[0].cli("store", "add", "Far Shop", "--host", "host3")
	shop := storeNamedOn(t, ms[0], "Far Shop")
	storeNamedOn(t, ms[1], "Far Shop")
	if shop.Host != "host3" {
		t.Fatalf("Far Shop placed on %q; want host3", shop.Host)
	}
	srv := site(t)

	// The agent of host1: ensure routes to host3, the capability URL is host1's endpoint.
	resp := capability(t, ms[0], shop, taskA)
	if !strings.HasPrefix(resp.CDPWS, fmt.Sprintf("ws://127.0.0.1:%d/c/", shop.ProxyPort)) {
		t.Fatalf("host1's ensure answered %q; want host1's endpoint of the store (port %d)", resp.CDPWS, shop.ProxyPort)
	}
	a := dialRaw(t, resp.CDPWS)
	_, sessA := a.createPage(srv.URL + "/from-host1")
	v, err := a.evaluate(sessA, "document.title")
	if err != nil || string(v) != `"page from-host1"` {
		t.Fatalf("the page host1's agent opened through the door: title %s, %v; want \"page from-host1\"", v, err)
	}
	if b := browserOf(t, ms[2], shop.ID); b.Status != api.StatusRunning {
		t.Errorf("Far Shop's browser on host3: %q; want it running there", b.Status)
	}
	for _, m := range ms[:2] {
		if b := browserOf(t, m, shop.ID); b.Status == api.StatusRunning {
			t.Errorf("Far Shop's browser runs on a host it is not placed on (pid %d)", b.PID)
		}
	}

	// A task of host2 on the same store: its own client, none of host1's task's tabs.
	respB := capability(t, ms[1], storeNamedOn(t, ms[1], "Far Shop"), taskB)
	bc := dialRaw(t, respB.CDPWS)
	tidB, _ := bc.createPage(srv.URL + "/from-host2")
	if ids := bc.targetIDs(false); !slices.Equal(ids, []string{tidB}) {
		t.Errorf("host2's task sees targets %q; want its own %q alone", ids, tidB)
	}

	// A task of host2 that its launcher named as host1's task is not let into host1's task's client: the
	// store's host refuses the second host's connection of the id, naming the rule.
	respSame := capability(t, ms[1], storeNamedOn(t, ms[1], "Far Shop"), taskA)
	if ws, r, err := websocket.DefaultDialer.Dial(respSame.CDPWS, nil); err == nil {
		ws.Close()
		t.Errorf("host2's task named %s joined host1's task of that name on host3's store; want it refused", taskA)
	} else if r == nil {
		t.Errorf("host2's connection as host1's task's client: %v; want a 409 answer naming host1", err)
	} else if body, _ := io.ReadAll(r.Body); r.StatusCode != http.StatusConflict || !strings.Contains(string(body), "is a task's of host host1") {
		t.Errorf("host2's connection as host1's task's client: %d %q; want 409 naming host1", r.StatusCode, body)
	}

	// Third-party clients of host1's task on the same capability URL, through the door unchanged: each opens
	// its page and sees its task's pages, never host2's task's.
	for client, endpoint := range map[string]string{"puppeteer": resp.CDPWS, "playwright": "http" + strings.TrimPrefix(resp.CDPWS, "ws")} {
		got := connectClient(t, client, endpoint, srv.URL+"/"+client+"-door")
		if got.Title != "page "+client+"-door" {
			t.Errorf("%s through host1's door opened %q; want its page", client, got.Title)
		}
		if !slices.ContainsFunc(got.URLs, func(u string) bool { return strings.HasSuffix(u, "/from-host1") }) {
			t.Errorf("%s through host1's door sees %q; want its task's page /from-host1 among them", client, got.URLs)
		}
		for _, u := range got.URLs {
			if strings.Contains(u, "/from-host2") {
				t.Errorf("%s on host1's task's capability URL sees host2's task's page %s", client, u)
			}
		}
	}

	// The store token is served to local users of the store's own host only, never through a door.
	var tokenView api.Store
	if err := json.Unmarshal([]byte(ms[0].cli("store", "show", "Far Shop", "--json")), &tokenView); err != nil {
		t.Fatal(err)
	}
	r, err := http.Get(tokenView.CDPHTTP + "/json/version")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "not served to another host") {
		t.Errorf("the store token's URL on host1 = %d %q; want 403: not served to another host", r.StatusCode, body)
	}
}

// A host killed -9 with its node (SPEC §19 "Move and failover"): the store it ran comes back on a living host
// at the agent's next call, within the lease TTL and a launch after the host TTL, with the login its browser
// had seconds before (the cluster's copy of the checkpoint), and never on two hosts at once.
func TestClusterFailoverKeepsTheLogin(t *testing.T) {
	ms := clusterOf(t, 3)
	ms[0].cli("store", "add", "Fail Shop", "--host", "host3")
	shop := storeNamedOn(t, ms[0], "Fail Shop")
	site := loginSite(t)
	v := randomValue(t)
	c := dialRaw(t, capability(t, ms[0], shop, taskA).CDPWS)
	c.createPage(site.URL + "/login?v=" + v)
	loggedInAt := time.Now()
	old := browserOf(t, ms[2], shop.ID)
	if old.Status != api.StatusRunning {
		t.Fatalf("Fail Shop's browser on host3: %q; want it running", old.Status)
	}
	// The checkpoint of the login reaches the cluster (a jar newer than the login).
	awaitClusterJar(t, ms[0], shop.ID, loggedInAt)

	if err := ms[2].cmd.Process.Kill(); err != nil { // host3's manager and, inside it, its NATS node
		t.Fatal(err)
	}
	ms[2].cmd.Wait()
	killedAt := time.Now()
	testkit.WaitFor(t, cluster.DefaultLeaseTTL/2, "host3's browser gone with its manager", func() bool { return gone(old.PID) })
	testkit.WaitFor(t, 3*cluster.DefaultHostTTL, "Fail Shop's placement moves to a living host", func() bool {
		p, err := readBucket(t, ms[0], cluster.BucketPlacement, shop.ID)
		return err == nil && (strings.Contains(p, `"host":"host1"`) || strings.Contains(p, `"host":"host2"`))
	})
	resp := capability(t, ms[0], shop, taskA) // waits for the lease to lapse, then launches there
	back := time.Since(killedAt)
	c2 := dialRaw(t, resp.CDPWS)
	_, s := c2.createPage(site.URL + "/whoami")
	got, err := c2.evaluate(s, "document.getElementById('c').textContent")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "sid-"+v) {
		t.Errorf("after the failover the site sees cookies %s; want the login sid-%s", got, v)
	}
	running := 0
	for _, m := range ms[:2] {
		if b := browserOf(t, m, shop.ID); b.Status == api.StatusRunning {
			running++
		}
	}
	if running != 1 {
		t.Errorf("Fail Shop's browser runs on %d living hosts; want exactly one", running)
	}
	t.Logf("Fail Shop answered again %s after host3 was killed (host TTL %s, lease TTL %s)", back.Round(100*time.Millisecond),
		cluster.DefaultHostTTL, cluster.DefaultLeaseTTL)
}

// awaitClusterJar waits until the cluster holds a checkpoint of store written after (a second's leeway for
// the file's time), read through host m.
func awaitClusterJar(t *testing.T, m *managed, store string, after time.Time) {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, "the login's checkpoint on the cluster", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := clusterConn(ctx, t, m)
		if err != nil {
			return false
		}
		defer conn.Close()
		logins, err := cluster.OpenLogins(ctx, conn.JetStream(), 3, 5)
		if err != nil {
			return false
		}
		_, at, err := logins.Jar(ctx, store)
		return err == nil && at.After(after.Add(-time.Second))
	})
}
