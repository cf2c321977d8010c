package cli

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

// serveCluster answers status, the store list and each store on home's real unix socket, as host1 of a
// cluster whose host3 is silent.
func serveCluster(t *testing.T, home string, st api.Status) {
	t.Helper()
	sock := api.SocketPath(home)
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == api.PathStatus:
			json.NewEncoder(w).Encode(st)
		case p == api.PathStores:
			json.NewEncoder(w).Encode(st.Stores)
		case strings.HasPrefix(p, api.PathStores+"/"):
			for _, s := range st.Stores {
				if s.Slug == strings.TrimPrefix(p, api.PathStores+"/") {
					json.NewEncoder(w).Encode(s)
					return
				}
			}
			http.NotFound(w, r)
		default:
			http.NotFound(w, r)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// fields maps each line's first field to its fields.
func fields(out string) map[string][]string {
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	return rows
}

// In a cluster the store tables say where each store's browser runs and in what state, as its host told
// the answering one: a store placed on another host is never shown as stopped because this host does not run it.
func TestStoreTablesShowTheirHosts(t *testing.T) {
	home, err := os.MkdirTemp("", "cv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	const here, there, gone = "0123456789abcdef0123456789abcd01", "0123456789abcdef0123456789abcd02", "0123456789abcdef0123456789abcd03"
	serveCluster(t, home, api.Status{Version: "test", Host: "host1",
		Hosts: []api.ClusterHost{
			{Name: "host1", Alive: true, Stores: []string{here}},
			{Name: "host2", Alive: true, Stores: []string{there}},
			{Name: "host3", Alive: false, Stores: []string{gone}, QuietMs: 12400, Unreachable: "no heartbeat for 12s"},
		},
		Stores: []api.Store{
			{ID: here, Name: "mine", Slug: "mine", Backend: "chrome", Host: "host1", Browser: api.BrowserState{Status: api.StatusRunning}},
			{ID: there, Name: "theirs", Slug: "theirs", Backend: "chrome", Host: "host2", Browser: api.BrowserState{Status: api.StatusStopped},
				CDPWS: "ws://127.0.0.1:9405/token"},
			{ID: gone, Name: "lost", Slug: "lost", Backend: "chrome", Host: "host3", Browser: api.BrowserState{Status: api.StatusStopped}},
		},
		Browsers: []api.Browser{
			{Key: here, Slug: "mine", Status: api.StatusRunning, PID: 42, Host: "host1"},
			{Key: there, Slug: "theirs", Status: api.StatusRunning, PID: 43, Host: "host2"},
			{Key: gone, Slug: "lost", Status: api.StatusStopped, Host: "host3"},
		}})

	code, out, errOut := run(t, "--home", home, "store", "list")
	if code != 0 {
		t.Fatalf("store list: exit %d (%s)", code, errOut)
	}
	rows := fields(out)
	if h := rows["NAME"]; len(h) < 3 || h[2] != "HOST" {
		t.Fatalf("store list header %q; want HOST after SLUG\n%s", h, out)
	}
	for slug, want := range map[string]string{"mine": "host1 chrome 0 running", "theirs": "host2 chrome 0 running on host2",
		"lost": "host3 chrome 0 unreachable on host3"} {
		if r, n := rows[slug], len(strings.Fields(want)); len(r) < 2+n || strings.Join(r[2:2+n], " ") != want {
			t.Errorf("store list row %q; want HOST BACKEND PORT BROWSER %q\n%s", r, want, out)
		}
	}

	code, out, errOut = run(t, "--home", home, "store", "show", "theirs")
	if code != 0 {
		t.Fatalf("store show: exit %d (%s)", code, errOut)
	}
	if !strings.Contains(out, "cdp_http and cdp_ws answer only on host2") || !strings.Contains(out, "running on host2") {
		t.Errorf("store show of a store of host2 does not say where it runs and where its token's URLs answer\n%s", out)
	}
}
