//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/integration/fakeziniao"
	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// addZiniaoStore adds a ziniao store through the CLI.
func (m *managed) addZiniaoStore(name, browser, username string, port int) {
	m.t.Helper()
	m.cli("store", "add", name, "--backend", "ziniao", "--ziniao-browser", browser, "--ziniao-company", "acme",
		"--ziniao-username", username, "--ziniao-password", "pw", "--ziniao-port", fmt.Sprint(port))
}

func TestZiniaoStores(t *testing.T) {
	t.Parallel()
	fake, err := fakeziniao.New(fakeziniao.Options{Company: "acme", Username: "u1", Password: "pw",
		Chrome: chromiumBinary(t), Log: zerolog.Nop(), Browsers: []fakeziniao.Browser{
			{Oauth: "oauth-a", Name: "A"}, {ID: "1001", Name: "B"}, {Oauth: "oauth-c", Name: "C"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fake.Close() })
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0", "VIBE_BROWSER_START_TIMEOUT_S=40") // 8 s per Ziniao attempt
	web := site(t)
	m.addZiniaoStore("zin-a", "oauth-a", "u1", fake.Port())
	m.addZiniaoStore("zin-b", "1001", "u1", fake.Port())
	m.addZiniaoStore("zin-c", "oauth-c", "u1", fake.Port())
	m.addZiniaoStore("zin-other", "oauth-a", "u2", fake.Port())

	out := m.mustAgent("--store zin-a --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/ziniao\neval document.title\nPY")
	if !strings.Contains(out, `"page ziniao"`) {
		t.Errorf("agent through a ziniao store printed %q; want the page title", out)
	}
	// Stores of one account run side by side.
	if err := ensureStore(m, "zin-b"); err != nil {
		t.Errorf("second store of the same account: %v", err)
	}
	// Another account is refused while this one is active, naming the stores that hold it.
	err = ensureStore(m, "zin-other")
	if !api.IsCode(err, api.CodeConflict) || !strings.Contains(err.Error(), "zin-a") || !strings.Contains(err.Error(), "acme/u1") {
		t.Errorf("store of another account: %v; want conflict naming acme/u1 and its stores", err)
	}
	// A stale launch is recovered per store: its environment stopped and started again.
	if _, err := m.client.StoreBrowser(context.Background(), "zin-a", api.ActionStop); err != nil {
		t.Fatal(err)
	}
	stopsBefore := fake.Calls("oauth-a").Stop
	if err := fake.SetFault("oauth-a", fakeziniao.Fault{StaleLaunches: 1}); err != nil {
		t.Fatal(err)
	}
	if err := ensureStore(m, "zin-a"); err != nil {
		t.Fatalf("ensure after a stale launch: %v", err)
	}
	if calls := fake.Calls("oauth-a"); calls.Stop <= stopsBefore {
		t.Errorf("stale launch not recovered by a per-store stopBrowser: %+v", calls)
	}
	if !m.running("zin-b") {
		t.Error("recovering zin-a disturbed zin-b")
	}
	// WebDriver not enabled: the error says so, with the fix.
	if err := fake.SetFault("oauth-c", fakeziniao.Fault{StatusCode: "-10003"}); err != nil {
		t.Fatal(err)
	}
	err = ensureStore(m, "zin-c")
	if !api.IsCode(err, api.CodeStartFailed) || !strings.Contains(err.Error(), "WebDriver is not enabled") {
		t.Errorf("-10003: %v; want start_failed saying WebDriver is not enabled and how to fix it", err)
	}
	// Once the account's stores stop, the other account may start (and here fails on its credentials).
	for _, s := range []string{"zin-a", "zin-b"} {
		if _, err := m.client.StoreBrowser(context.Background(), s, api.ActionStop); err != nil {
			t.Fatal(err)
		}
	}
	if err := ensureStore(m, "zin-other"); api.IsCode(err, api.CodeConflict) {
		t.Errorf("account claim not released after its stores stopped: %v", err)
	}
}

func TestZiniaoClientStartedWhenNotRunning(t *testing.T) {
	t.Parallel()
	bins := builtBinaries(t)
	port := fakeziniao.DeadPortFor(t)
	pidfile := filepath.Join(t.TempDir(), "client.pid")
	t.Cleanup(func() { // the manager never stops the shared client: the test does
		if b, err := os.ReadFile(pidfile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGTERM)
				testkit.WaitFor(t, 20*time.Second, "the fake Ziniao client to exit", func() bool { return gone(pid) })
			}
		}
	})
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0", "VIBE_BROWSER_START_TIMEOUT_S=60",
		"VIBE_ZINIAO_CLIENT="+bins.fakeZiniaoClient, "FAKEZINIAO_ACCOUNT=acme/u1/pw",
		"FAKEZINIAO_BROWSERS=oauth-a", "FAKEZINIAO_PIDFILE="+pidfile)
	m.addZiniaoStore("zin-auto", "oauth-a", "u1", port)
	web := site(t)
	out := m.mustAgent("--store zin-auto --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/auto\neval document.title\nPY")
	if !strings.Contains(out, `"page auto"`) {
		t.Errorf("agent through a store whose Ziniao client was not running printed %q; want the page title", out)
	}
	b, err := os.ReadFile(pidfile)
	if err != nil {
		t.Fatalf("the manager did not start the Ziniao client: %v", err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if _, err := m.client.StoreBrowser(context.Background(), "zin-auto", api.ActionStop); err != nil {
		t.Fatal(err)
	}
	if gone(pid) {
		t.Error("stopping a store stopped the shared Ziniao client")
	}
	if _, err := os.Stat(filepath.Join(m.home, "run", "ziniao-client.log")); err != nil {
		t.Errorf("no client log: %v", err)
	}

	// Without VIBE_ZINIAO_CLIENT (and not on macOS) the manager cannot start it, and says how to.
	plain := startManager(t, "VIBE_BROWSER_START_TIMEOUT_S=60")
	plain.addZiniaoStore("zin-down", "oauth-a", "u1", fakeziniao.DeadPortFor(t))
	err = ensureStore(plain, "zin-down")
	if !api.IsCode(err, api.CodeUnavailable) || !strings.Contains(err.Error(), "--run_type=web_driver") ||
		!strings.Contains(err.Error(), "VIBE_ZINIAO_CLIENT") {
		t.Errorf("ensure with no Ziniao client: %v; want unavailable saying how to start it", err)
	}
}
