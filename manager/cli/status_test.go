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

// serveStatus answers GET /v1/status with st on home's real unix socket.
func serveStatus(t *testing.T, home string, st api.Status) {
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
		if r.URL.Path != api.PathStatus {
			http.NotFound(w, r)
			return
		}
		json.NewEncoder(w).Encode(st)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

func TestStatusNamesATasksStoreBySlug(t *testing.T) {
	home, err := os.MkdirTemp("", "st-") // short: a unix socket path has at most 104-108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	const storeID = "0123456789abcdef0123456789abcdef"
	serveStatus(t, home, api.Status{Version: "test", Stores: []api.Store{{ID: storeID, Slug: "acme-shop"}},
		Tasks: []api.Task{{ID: "a1b2c3d4-0001", Store: storeID, StoreSlug: "acme-shop", Status: "running"}}})

	code, out, errOut := run(t, "--home", home, "status")
	if code != 0 {
		t.Fatalf("status: exit %d (%s)", code, errOut)
	}
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "a1b2c3d4-0001") {
			line = l
		}
	}
	if fields := strings.Fields(line); len(fields) < 2 || fields[1] != "acme-shop" {
		t.Errorf("status task line %q; want the store's slug acme-shop in the STORE column\n%s", line, out)
	}

	code, out, errOut = run(t, "--home", home, "status", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d (%s)", code, errOut)
	}
	var got struct {
		Tasks []map[string]any `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Tasks) != 1 {
		t.Fatalf("status --json = %s (%v); want one task", out, err)
	}
	if task := got.Tasks[0]; task["store"] != storeID || task["store_slug"] != "acme-shop" {
		t.Errorf("status --json task = %v; want store %s (the id, kept) and store_slug acme-shop", task, storeID)
	}
}

// TestStatusNamesTheKeeper: a browser on the pipe shows its keeper's pid beside its own, one on a port a dash.
func TestStatusNamesTheKeeper(t *testing.T) {
	home, err := os.MkdirTemp("", "st-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	serveStatus(t, home, api.Status{Version: "test", Browsers: []api.Browser{
		{Slug: "acme", Status: api.StatusRunning, PID: 4242, KeeperPID: 4240, ProxyPort: 9401},
		{Slug: "ported", Status: api.StatusRunning, PID: 5151, ProxyPort: 9402},
	}})
	code, out, errOut := run(t, "--home", home, "status")
	if code != 0 {
		t.Fatalf("status: exit %d (%s)", code, errOut)
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = f
		}
	}
	if h := rows["BROWSER"]; len(h) < 4 || h[3] != "KEEPER" {
		t.Fatalf("status header %q; want KEEPER after PID\n%s", h, out)
	}
	if r := rows["acme"]; len(r) < 5 || r[2] != "4242" || r[3] != "4240" || r[4] != "9401" {
		t.Errorf("acme row %q; want pid 4242, keeper 4240, port 9401", r)
	}
	if r := rows["ported"]; len(r) < 4 || r[3] != "-" {
		t.Errorf("ported row %q; want no keeper (-)", r)
	}
}

// In a cluster, status lists every host, live or unreachable with why, and each browser's host.
func TestStatusListsTheHosts(t *testing.T) {
	home, err := os.MkdirTemp("", "st-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	serveStatus(t, home, api.Status{Version: "test", Host: "host1",
		Hosts: []api.ClusterHost{{Name: "host1", Alive: true, FreeMemMB: 2048, Stores: []string{"a"}},
			{Name: "host3", Alive: false, QuietMs: 14000, Unreachable: "no heartbeat for 14s"}},
		Browsers: []api.Browser{{Key: "a", Slug: "near", Status: "running", Host: "host1", PID: 9},
			{Key: "b", Slug: "far", Status: "stopped", Host: "host3"}}})
	code, out, errOut := run(t, "--home", home, "status")
	if code != 0 {
		t.Fatalf("status: exit %d (%s)", code, errOut)
	}
	for _, want := range []string{"host1 (this host)", "UNREACHABLE", "host host3 is unreachable: no heartbeat for 14s",
		"HOST", "far      host3"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}
