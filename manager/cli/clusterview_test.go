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

// In a cluster the tables say which hosts there are, which is silent, and where each store's browser runs:
// a store placed on another host is never shown as stopped because this host does not run it.
func TestTablesShowTheCluster(t *testing.T) {
	home, err := os.MkdirTemp("", "cv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	const here, there, gone = "0123456789abcdef0123456789abcd01", "0123456789abcdef0123456789abcd02", "0123456789abcdef0123456789abcd03"
	serveCluster(t, home, api.Status{Version: "test", Host: "host1",
		Hosts: []api.ClusterHost{
			{Name: "host1", Alive: true, Advertise: "10.0.0.1:7422", FreeMemMB: 9000, Stores: []string{here}},
			{Name: "host2", Alive: true, Advertise: "10.0.0.2:7422", FreeMemMB: 8000},
			{Name: "host3", Alive: false, Advertise: "10.0.0.3:7422", FreeMemMB: 7000, Stores: []string{gone}, QuietMs: 12400},
		},
		Stores: []api.Store{
			{ID: here, Name: "mine", Slug: "mine", Backend: "chrome", Host: "host1", Browser: api.BrowserState{Status: api.StatusRunning}},
			{ID: there, Name: "theirs", Slug: "theirs", Backend: "chrome", Host: "host2", Browser: api.BrowserState{Status: api.StatusStopped},
				CDPWS: "ws://127.0.0.1:9405/token"},
			{ID: gone, Name: "lost", Slug: "lost", Backend: "chrome", Host: "host3", Browser: api.BrowserState{Status: api.StatusStopped}},
		},
		Browsers: []api.Browser{
			{Key: here, Slug: "mine", Status: api.StatusRunning, PID: 42},
			{Key: there, Slug: "theirs", Status: api.StatusStopped},
			{Key: gone, Slug: "lost", Status: api.StatusStopped},
		}})

	code, out, errOut := run(t, "--home", home, "status")
	if code != 0 {
		t.Fatalf("status: exit %d (%s)", code, errOut)
	}
	rows := fields(out)
	if r := rows["host3"]; len(r) < 2 || r[1] != "UNREACHABLE" || !strings.Contains(out, "(silent 12s)") {
		t.Errorf("host3 row %q; want UNREACHABLE (silent 12s)\n%s", r, out)
	}
	if !strings.Contains(out, "host host3 is unreachable: its stores move to live hosts") {
		t.Errorf("status says nothing of what an unreachable host means\n%s", out)
	}
	if r := rows["host1"]; len(r) < 3 || r[1] != "(this" {
		t.Errorf("host1 row %q; want it marked as this one", r)
	}
	for slug, want := range map[string]string{"mine": "host1 running", "theirs": "host2 stopped on host2",
		"lost": "host3 unreachable on host3"} {
		if r := rows[slug]; len(r) < 3 || strings.Join(r[1:len(strings.Fields(want))+1], " ") != want {
			t.Errorf("status row %q; want HOST and STATUS %q\n%s", r, want, out)
		}
	}

	code, out, errOut = run(t, "--home", home, "store", "list")
	if code != 0 {
		t.Fatalf("store list: exit %d (%s)", code, errOut)
	}
	rows = fields(out)
	if h := rows["NAME"]; len(h) < 3 || h[2] != "HOST" {
		t.Fatalf("store list header %q; want HOST after SLUG\n%s", h, out)
	}
	if r := rows["lost"]; len(r) < 7 || r[2] != "host3" || r[5] != "unreachable" {
		t.Errorf("store list row %q; want host3 and unreachable\n%s", r, out)
	}

	code, out, errOut = run(t, "--home", home, "store", "show", "theirs")
	if code != 0 {
		t.Fatalf("store show: exit %d (%s)", code, errOut)
	}
	if !strings.Contains(out, "cdp_http and cdp_ws answer only on host2") || !strings.Contains(out, "stopped on host2") {
		t.Errorf("store show of a store of host2 does not say where it runs and where its token's URLs answer\n%s", out)
	}
}
