//go:build integration

package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/cluster"
)

// sessionSite is a marketplace that counts each login's open sessions: /login sets the login cookie, /hold
// keeps a request open for as long as the page that made it lives (a tab of a logged-in browser), and the
// site notes how many it held at once per login.
type sessionSite struct {
	*httptest.Server
	mu   sync.Mutex
	open map[string]int // login -> sessions open now
	most map[string]int // login -> the most ever open at once
}

func newSessionSite(t *testing.T) *sessionSite {
	t.Helper()
	s := &sessionSite{open: map[string]int{}, most: map[string]int{}}
	stop := make(chan struct{}) // ends the held sessions when the test ends, before the server closes
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: r.URL.Query().Get("v"), Path: "/", MaxAge: 86400, HttpOnly: true})
			fmt.Fprint(w, "<!doctype html><title>logged in</title>")
		case "/shop":
			fmt.Fprint(w, "<!doctype html><title>shop</title><script>fetch('/hold')</script>")
		case "/hold":
			c, err := r.Cookie("sid")
			if err != nil {
				http.Error(w, "not logged in", http.StatusUnauthorized)
				return
			}
			s.mu.Lock()
			s.open[c.Value]++
			s.most[c.Value] = max(s.most[c.Value], s.open[c.Value])
			s.mu.Unlock()
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done(): // the tab's browser closed the connection, or died
			case <-stop:
			}
			s.mu.Lock()
			s.open[c.Value]--
			s.mu.Unlock()
		}
	}))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	return s
}

func (s *sessionSite) counts(login string) (open, most int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open[login], s.most[login]
}

// A host cut off from the cluster (SPEC §19): host4 reaches the cluster through one node, over a connection
// the test severs while its browser holds a logged-in session open on a site. Host4 kills the browser before
// its lease can lapse; the store comes back on a living host at the agent's next call, logged in; the site
// never sees two sessions of the login at once, and the process table never two browsers of the store.
func TestClusterCutHostStopsFirst(t *testing.T) {
	ms, ca := clusterWithCA(t, 3)
	node1 := ""
	for _, kv := range ms[0].env {
		if v, ok := strings.CutPrefix(kv, "VIBE_CLUSTER_NODE="); ok {
			node1 = v
		}
	}
	way := testkit.NewSeverable(t, node1)
	door4 := freeLoopback(t)
	h4 := prepareManager(t, builtBinaries(t), settledTempDir(t), "VIBE_HOST=host4", "VIBE_CLUSTER=tls://"+way.Addr,
		"VIBE_ADVERTISE="+door4)
	h4.cli("cluster", "join", ca, "--host", "host4", "--advertise", door4)
	h4.start()
	testkit.WaitFor(t, 30*time.Second, "host1 sees host4 alive", func() bool { return len(hostsAlive(t, ms[0])) == 4 })

	ms[0].cli("store", "add", "Cut Shop", "--host", "host4")
	shop := storeNamedOn(t, ms[0], "Cut Shop")
	site := newSessionSite(t)
	login := randomValue(t)
	c := dialRaw(t, capability(t, ms[0], shop, taskA).CDPWS)
	c.createPage(site.URL + "/login?v=" + login)
	loggedInAt := time.Now()
	c.createPage(site.URL + "/shop")
	testkit.WaitFor(t, 20*time.Second, "the shop's session open on host4's browser", func() bool {
		open, _ := site.counts(login)
		return open == 1
	})
	old := browserOf(t, h4, shop.ID)
	if old.Status != api.StatusRunning {
		t.Fatalf("Cut Shop's browser on host4: %q; want it running", old.Status)
	}
	awaitClusterJar(t, ms[0], shop.ID, loggedInAt)

	way.Sever()
	cutAt := time.Now()
	testkit.WaitFor(t, cluster.DefaultLeaseTTL, "host4 kills its browser, cut off", func() bool { return gone(old.PID) })
	goneAt := time.Now()
	if d := goneAt.Sub(cutAt); d >= cluster.DefaultLeaseTTL-2*time.Second {
		t.Errorf("host4's browser lived %s after the cut; want it gone well before the lease TTL (%s)", d, cluster.DefaultLeaseTTL)
	}
	testkit.WaitFor(t, 3*cluster.DefaultHostTTL, "Cut Shop's placement moves off host4", func() bool {
		p, err := readBucket(t, ms[0], cluster.BucketPlacement, shop.ID)
		return err == nil && p != "" && !strings.Contains(p, `"host":"host4"`)
	})
	c2 := dialRaw(t, capability(t, ms[0], shop, taskA).CDPWS)
	back := time.Since(cutAt)
	c2.createPage(site.URL + "/shop")
	testkit.WaitFor(t, 20*time.Second, "the shop's session open again, on a living host", func() bool {
		open, _ := site.counts(login)
		return open == 1
	})
	if _, most := site.counts(login); most != 1 {
		t.Errorf("the site saw %d sessions of the login at once; want never more than one", most)
	}
	var runningOn []string
	for i, m := range ms {
		if b := browserOf(t, m, shop.ID); b.Status == api.StatusRunning {
			runningOn = append(runningOn, fmt.Sprintf("host%d", i+1))
			if started := b.StartedAt; !started.IsZero() && started.Before(goneAt) {
				t.Errorf("Cut Shop's new browser on host%d started at %s, before host4's was gone (%s)", i+1, started, goneAt)
			}
		}
	}
	if len(runningOn) != 1 {
		t.Errorf("Cut Shop's browser runs on %q; want exactly one living host", runningOn)
	}
	t.Logf("cut at 0; host4's browser gone at %s; the store answered again on %q at %s", goneAt.Sub(cutAt).Round(100*time.Millisecond),
		runningOn, back.Round(100*time.Millisecond))
}
