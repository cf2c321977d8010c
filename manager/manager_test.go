package manager_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager"
	"vibebrowser/manager/api"
	"vibebrowser/manager/config"
)

// daemon is a manager running in-process on a temp home, served on its real unix socket.
type daemon struct {
	home   string
	cfg    *config.Config
	client *api.Client
	cancel context.CancelFunc
	done   chan error
}

// startDaemon runs a manager with env applied over a minimal environment. With withBU, a fake real
// browser-use CLI and a fake shim are configured.
func startDaemon(t *testing.T, env map[string]string, withBU bool) *daemon {
	t.Helper()
	return runDaemon(t, daemonConfig(t, env, withBU))
}

// daemonConfig is startDaemon's configuration, for a test to adjust before runDaemon.
func daemonConfig(t *testing.T, env map[string]string, withBU bool) *config.Config {
	t.Helper()
	home := t.TempDir()
	tools := t.TempDir()
	vars := map[string]string{"VIBE_HOME": home, "PATH": "/nonexistent", "VIBE_SHIM": testkit.FakeExecutable(t, tools, "wrapshim"),
		"VIBE_PROXY_PORT_BASE": strconv.Itoa(testkit.DaemonPortBase), "VIBE_UI_ADDR": "off"} // tests that want the UI pick a free port
	if withBU {
		vars["VIBE_BROWSER_USE"] = testkit.FakeExecutable(t, tools, "browser-use")
	}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func runDaemon(t *testing.T, cfg *config.Config) *daemon {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemon{home: cfg.Home, cfg: cfg, client: api.NewClient(filepath.Join(cfg.Home, api.SocketRel)),
		cancel: cancel, done: make(chan error, 1)}
	go func() { d.done <- manager.Run(ctx, cfg, zerolog.Nop(), "test") }()
	t.Cleanup(func() { d.stop(t) })
	testkit.WaitFor(t, 10*time.Second, "the manager to answer", func() bool {
		select {
		case err := <-d.done:
			t.Fatalf("manager exited: %v", err)
		default:
		}
		_, err := d.client.Health(context.Background())
		return err == nil
	})
	return d
}

func (d *daemon) stop(t *testing.T) {
	t.Helper()
	if d.cancel == nil {
		return
	}
	d.cancel()
	d.cancel = nil
	select {
	case err := <-d.done:
		if err != nil {
			t.Errorf("manager exit: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("manager did not stop within 30s")
	}
}

// wantAPIError asserts err is the manager's answer with status and a message containing fragment.
func wantAPIError(t *testing.T, err error, status int, fragment string) {
	t.Helper()
	var apiErr *api.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("error %v; want an API error with status %d", err, status)
	}
	if apiErr.Status != status || !strings.Contains(apiErr.Message, fragment) {
		t.Errorf("API error %d %q; want %d containing %q", apiErr.Status, apiErr.Message, status, fragment)
	}
}

var bg = context.Background()

func TestSocketIsPrivate(t *testing.T) {
	d := startDaemon(t, nil, false)
	fi, err := os.Stat(filepath.Join(d.home, api.SocketRel))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v; want a 0600 socket", fi.Mode())
	}
}

func TestSecondManagerOnSameHomeRefuses(t *testing.T) {
	d := startDaemon(t, nil, false)
	err := manager.Run(bg, d.cfg, zerolog.Nop(), "test")
	if err == nil || !strings.Contains(err.Error(), "another manager is running") {
		t.Errorf("second Run = %v; want a refusal naming the running manager", err)
	}
	if _, err := d.client.Health(bg); err != nil {
		t.Errorf("the first manager stopped answering after the refused start: %v", err)
	}
}

func TestStaleSocketIsReplaced(t *testing.T) {
	home := t.TempDir()
	sock := filepath.Join(home, api.SocketRel)
	os.MkdirAll(filepath.Dir(sock), 0o700)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // leaves the socket file behind, as a crashed manager does
	cfg, err := config.FromEnv(func(k string) string {
		return map[string]string{"VIBE_HOME": home, "PATH": "/nonexistent", "VIBE_UI_ADDR": "off"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	runDaemon(t, cfg)
}

func TestStoresAPI(t *testing.T) {
	d := startDaemon(t, nil, true)
	c := d.client
	s, err := c.CreateStore(bg, api.StoreSpec{Name: "Acme Shop"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Slug != "acme-shop" || s.Backend != "chrome" || s.ProxyPort < testkit.DaemonPortBase || s.Browser.Status != api.StatusStopped {
		t.Errorf("created %+v; want slug acme-shop, chrome, a registry port, stopped", s)
	}
	if !strings.HasPrefix(s.CDPHTTP, "http://127.0.0.1:") || !strings.HasPrefix(s.CDPWS, "ws://127.0.0.1:") ||
		strings.TrimPrefix(s.CDPHTTP, "http://") != strings.TrimPrefix(s.CDPWS, "ws://") {
		t.Errorf("endpoints %q %q; want http and ws forms of one 127.0.0.1 URL with the token", s.CDPHTTP, s.CDPWS)
	}
	cfg, err := api.LoadShimConfig(filepath.Join(d.home, "bin", "acme-shop", api.ShimConfigName))
	if err != nil {
		t.Fatalf("wrapper written at store creation: %v", err)
	}
	if cfg.StoreID != s.ID || cfg.RealBU != d.cfg.BrowserUse || cfg.WorkerSlots != 3 || cfg.CallTimeoutS != 120 {
		t.Errorf("wrapper config %+v does not match the store and knobs", cfg)
	}
	for _, ref := range []string{"Acme Shop", "acme-shop", s.ID} {
		if got, err := c.GetStore(bg, ref); err != nil || got.ID != s.ID {
			t.Errorf("GetStore(%q) = %+v, %v; want store %s", ref, got, err, s.ID)
		}
	}
	cjk, err := c.CreateStore(bg, api.StoreSpec{Name: "アクメ商店"})
	if err != nil || cjk.Slug != "store-"+cjk.ID[:8] {
		t.Errorf("CJK store = %+v, %v; want slug store-<id8>", cjk, err)
	}
	if cjk.ProxyPort == s.ProxyPort {
		t.Errorf("two stores share port %d", s.ProxyPort)
	}
	st, err := c.Status(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range st.Browsers {
		if b.Key == s.ID && (b.Status != api.StatusStopped || b.ProxyPort != s.ProxyPort) {
			t.Errorf("status of the stopped store = %+v; want stopped on its port %d (store show says so)", b, s.ProxyPort)
		}
	}

	_, err = c.CreateStore(bg, api.StoreSpec{Name: "ACME shop!"})
	wantAPIError(t, err, http.StatusConflict, `taken by store "Acme Shop"`)
	for _, name := range []string{"web", "_private", "acme-aux", "acme-w2"} {
		_, err = c.CreateStore(bg, api.StoreSpec{Name: name})
		wantAPIError(t, err, http.StatusConflict, "reserved")
	}
	_, err = c.CreateStore(bg, api.StoreSpec{Name: "bad\x07name"})
	wantAPIError(t, err, http.StatusBadRequest, "printable")
	_, err = c.CreateStore(bg, api.StoreSpec{Name: "x", Backend: "firefox"})
	wantAPIError(t, err, http.StatusBadRequest, "want chrome, ziniao or cdp")
	_, err = c.CreateStore(bg, api.StoreSpec{Name: "remote", Backend: "cdp"})
	wantAPIError(t, err, http.StatusBadRequest, "needs --cdp-url")
	_, err = c.CreateStore(bg, api.StoreSpec{Name: "remote", Backend: "cdp", StoreSettings: api.StoreSettings{CDPURL: "ftp://x"}})
	wantAPIError(t, err, http.StatusBadRequest, "scheme")
	err = c.Do(bg, http.MethodPost, api.PathStores, map[string]any{"name": "x", "colour": "red"}, nil)
	wantAPIError(t, err, http.StatusBadRequest, "unknown field")

	newName := "Acme Renamed"
	if u, err := c.UpdateStore(bg, "acme-shop", api.StoreUpdate{Name: &newName}); err != nil || u.Name != newName || u.Slug != "acme-shop" {
		t.Errorf("rename = %+v, %v; want the new name and the same slug", u, err)
	}
	list, err := c.ListStores(bg)
	if err != nil || len(list) != 2 {
		t.Errorf("ListStores = %d stores, %v; want 2", len(list), err)
	}
	if err := c.DeleteStore(bg, "acme-shop"); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetStore(bg, "acme-shop")
	wantAPIError(t, err, http.StatusNotFound, `no store named "acme-shop"`)
	if _, err := os.Stat(filepath.Join(d.home, "bin", "acme-shop")); !os.IsNotExist(err) {
		t.Errorf("wrapper of a removed store still there (%v)", err)
	}
	again, err := c.CreateStore(bg, api.StoreSpec{Name: "Acme Shop"})
	if err != nil || again.Slug != "acme-shop" {
		t.Errorf("re-adding a removed store's name = %+v, %v; want the slug free again", again, err)
	}
}

func TestEnsureRefusals(t *testing.T) {
	t.Run("no real browser-use", func(t *testing.T) {
		d := startDaemon(t, nil, false)
		_, err := d.client.EnsureSession(bg, api.EnsureRequest{Kind: api.KindWeb, ClientID: "manual", BUName: "web"})
		wantAPIError(t, err, http.StatusServiceUnavailable, "no real browser-use CLI")
		if _, err := os.Stat(filepath.Join(d.home, "bin", "_web")); !os.IsNotExist(err) {
			t.Error("a web wrapper was written without a real browser-use CLI")
		}
		if _, err := os.Stat(filepath.Join(d.home, "bin", "_guard", api.ShimConfigName)); err != nil {
			t.Errorf("the guard is missing: %v", err)
		}
		// An MCP server needs no browser-use: its ensure goes on to the next check.
		_, err = d.client.EnsureSession(bg, api.EnsureRequest{Kind: api.KindStore, StoreID: "0d1c2b3a-none",
			ClientID: "manual", BUName: "x", Via: api.ViaMCP})
		wantAPIError(t, err, http.StatusNotFound, "this wrapper is stale")
	})
	d := startDaemon(t, nil, true)
	tests := []struct {
		name   string
		req    api.EnsureRequest
		status int
		want   string
	}{
		{"unknown store", api.EnsureRequest{Kind: api.KindStore, StoreID: "0d1c2b3a-none", ClientID: "manual", BUName: "x"}, 404, "this wrapper is stale"},
		{"bad client id", api.EnsureRequest{Kind: api.KindWeb, ClientID: "a/b", BUName: "web"}, 400, "client_id"},
		{"bad bu name", api.EnsureRequest{Kind: api.KindWeb, ClientID: "manual", BUName: strings.Repeat("x", 65)}, 400, "bu_name"},
		{"bad kind", api.EnsureRequest{Kind: "ziniao", ClientID: "manual", BUName: "x"}, 400, "want store or web"},
		{"bad task id", api.EnsureRequest{Kind: api.KindWeb, ClientID: "manual", BUName: "web", TaskID: "x"}, 400, "task"},
		{"bad via", api.EnsureRequest{Kind: api.KindWeb, ClientID: "manual", BUName: "web", Via: "cli"}, 400, `want "mcp", "cdp" or none`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.client.EnsureSession(bg, tt.req)
			wantAPIError(t, err, tt.status, tt.want)
		})
	}
	err := d.client.Do(bg, http.MethodGet, "/v1/nope", nil, nil)
	wantAPIError(t, err, http.StatusNotFound, "no route")
}

func TestTasksAPI(t *testing.T) {
	d := startDaemon(t, nil, true)
	c := d.client
	s, err := c.CreateStore(bg, api.StoreSpec{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	const id = "a1b2c3d4-0000-4000-8000-000000000001"
	task, err := c.PutTask(bg, id, api.TaskUpdate{Store: "shop", Status: "queued"})
	if err != nil || task.Store != s.ID || task.Status != "queued" || task.LeaseUntil.Before(time.Now().Add(50*time.Minute)) {
		t.Errorf("PutTask = %+v, %v; want queued on %s with an hour's lease", task, err, s.ID)
	}
	st, err := c.Status(bg)
	if err != nil || len(st.Tasks) != 1 || st.Tasks[0].Store != s.ID || st.Tasks[0].StoreSlug != "shop" {
		t.Errorf("Status tasks = %+v, %v; want the task with store %s and store_slug shop", st.Tasks, err, s.ID)
	}
	if task, err = c.PutTask(bg, id, api.TaskUpdate{Status: "waiting"}); err != nil || task.Status != "waiting" {
		t.Errorf("status update = %+v, %v", task, err)
	}
	_, err = c.PutTask(bg, id, api.TaskUpdate{Status: "done"})
	wantAPIError(t, err, http.StatusBadRequest, "pending queued designing planned running waiting completed failed")
	_, err = c.PutTask(bg, id, api.TaskUpdate{Store: "nope", Status: "running"})
	wantAPIError(t, err, http.StatusNotFound, "no store named")
	if tasks, err := c.ListTasks(bg); err != nil || len(tasks) != 1 {
		t.Errorf("ListTasks = %+v, %v; want one", tasks, err)
	}
	if err := c.DeleteTask(bg, id); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetTask(bg, id)
	wantAPIError(t, err, http.StatusNotFound, "not found")
}

func TestBootWipesStaleWrappers(t *testing.T) {
	d := startDaemon(t, nil, true)
	s, err := d.client.CreateStore(bg, api.StoreSpec{Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	d.stop(t)
	bin := filepath.Join(d.home, "bin")
	write := func(dir, config string) {
		os.MkdirAll(filepath.Join(bin, dir), 0o700)
		os.WriteFile(filepath.Join(bin, dir, api.ShimConfigName), []byte(config), 0o600)
	}
	write("older", `{"format":0,"kind":"store","store_id":"`+s.ID+`"}`)
	write("deleted-store", `{"format":1,"kind":"store","store_id":"0d1c2b3a-gone"}`)
	newer := `{"format":99,"kind":"store","store_id":"` + s.ID + `","from_the_future":true}`
	write("kept", newer) // a newer manager's wrapper: kept as is, never downgraded
	os.MkdirAll(filepath.Join(bin, "no-config"), 0o700)
	os.Remove(filepath.Join(bin, "_guard", api.ShimConfigName))
	runDaemon(t, d.cfg)
	for dir, want := range map[string]bool{"older": false, "deleted-store": false, "no-config": false,
		"kept": true, "_web": true, "_guard": true} {
		_, err := os.Stat(filepath.Join(bin, dir, api.ShimConfigName))
		if got := err == nil; got != want {
			t.Errorf("after boot, bin/%s present = %v; want %v", dir, got, want)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(bin, "kept", api.ShimConfigName)); string(data) != newer {
		t.Errorf("newer-format wrapper config became %s; want it untouched", data)
	}
}

func TestEventsAndMetrics(t *testing.T) {
	d := startDaemon(t, nil, true)
	ev := api.Event{Kind: api.EventWedgeUnrecoverable, BUName: "acme-a1b2c3d4", Message: "wedged twice"}
	if err := d.client.ReportEvent(bg, ev); err != nil {
		t.Fatal(err)
	}
	wantAPIError(t, d.client.ReportEvent(bg, api.Event{}), http.StatusBadRequest, "kind is required")
	conn, err := net.Dial("unix", filepath.Join(d.home, api.SocketRel))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req, _ := http.NewRequest(http.MethodGet, "http://manager"+api.PathMetrics, nil)
	if err := req.Write(conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`vibe_events_total{kind="wedge_unrecoverable"} 1`,
		"vibe_browsers_running 0",
		"vibe_mux_clients 0",
		"vibe_ensure_seconds_bucket",
		`vibe_browser_starts_total{backend="chrome"} 0`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("GET /metrics lacks %q", want)
		}
	}
}

func TestReapRoute(t *testing.T) {
	d := startDaemon(t, nil, true)
	res, err := d.client.Reap(bg)
	if err != nil || res.Killed == nil || len(res.Killed) != 0 {
		t.Errorf("Reap on an empty runtime dir = %+v, %v; want an empty result", res, err)
	}
	if _, err := os.Stat(filepath.Join(d.home, "r", ".vibe-browser-runtime")); err != nil {
		t.Errorf("runtime dir not claimed with its marker: %v", err)
	}
}

func TestShimCallsRenewTheLeaseSparingly(t *testing.T) {
	const id = "a1b2c3d4-0000-4000-8000-000000000002"
	// No browser can start, so every call is quick; it fails after the task was registered.
	// Every call fails to start a browser; the relaunch budget is off so that the calls' count never
	// decides the answer.
	noBrowser := map[string]string{"VIBE_CHROME": "/nonexistent/chromium", "VIBE_BROWSER_RELAUNCH_MAX": "0"}
	call := func(d *daemon) {
		t.Helper()
		_, err := d.client.EnsureSession(bg, api.EnsureRequest{Kind: api.KindWeb, ClientID: id, BUName: "web-a1b2c3d4", TaskID: id})
		wantAPIError(t, err, http.StatusServiceUnavailable, "VIBE_CHROME")
	}
	lease := func(d *daemon) time.Time {
		t.Helper()
		task, err := d.client.GetTask(bg, id)
		if err != nil {
			t.Fatal(err)
		}
		return task.LeaseUntil
	}

	// An hour's lease is written again at most every 36 s: calls in between write nothing.
	d := startDaemon(t, noBrowser, true)
	call(d)
	first := lease(d)
	if first.Before(time.Now().Add(59 * time.Minute)) {
		t.Fatalf("the first call registered a lease until %v; want an hour ahead", first)
	}
	call(d)
	if again := lease(d); !again.Equal(first) {
		t.Errorf("a call right after the first moved the lease from %v to %v; want no write", first, again)
	}
	// A deleted task is registered again by its next call, however recent the last write.
	if err := d.client.DeleteTask(bg, id); err != nil {
		t.Fatal(err)
	}
	call(d)
	if task, err := d.client.GetTask(bg, id); err != nil || task.Status != "running" {
		t.Errorf("after deletion, the next call left %+v, %v; want the task registered as running", task, err)
	}

	// Once the window has passed (20 ms of a 2 s lease), a call renews the lease.
	noBrowser["VIBE_TASK_LEASE_S"] = "2"
	short := startDaemon(t, noBrowser, true)
	call(short)
	before := lease(short)
	testkit.WaitFor(t, 5*time.Second, "a later call to renew the lease", func() bool {
		call(short)
		return lease(short).After(before)
	})
}

// TestWebShowWhileTheWebBrowserSleeps: what `vibe-browser web show` prints before anything started the web
// browser: stopped, on the port boot bound for it, with both endpoints.
func TestWebShowWhileTheWebBrowserSleeps(t *testing.T) {
	d := startDaemon(t, nil, true)
	v, err := d.client.Web(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantHTTP := fmt.Sprintf("http://127.0.0.1:%d/", v.ProxyPort)
	if v.Status != api.StatusStopped || v.ProxyPort == 0 || !strings.HasPrefix(v.CDPHTTP, wantHTTP) ||
		v.CDPWS != "ws"+strings.TrimPrefix(v.CDPHTTP, "http") {
		t.Fatalf("web show = %+v; want stopped on its bound port with cdp_http %s<token> and the matching cdp_ws", v, wantHTTP)
	}
}
