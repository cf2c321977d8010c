//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// The endpoints `store show` prints answer whenever the manager runs: a store's port is bound from store add
// on, a client connecting to a sleeping store wakes its browser, and discovery probes never do.

// countingChrome is a VIBE_CHROME wrapper that counts its launches before it runs the real Chromium.
func countingChrome(t *testing.T) (bin string, launches func() int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "launches")
	script := fmt.Sprintf("#!/bin/bash\necho launch >> %q\nexec %q \"$@\"\n", count, chromiumBinary(t))
	bin = filepath.Join(dir, "chrome")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "launch\n")
	}
}

// addStore runs store add and returns what it printed.
func (m *managed) addStore(name string) api.Store {
	m.t.Helper()
	var s api.Store
	if err := json.Unmarshal([]byte(m.cli("store", "add", name, "--json")), &s); err != nil {
		m.t.Fatal(err)
	}
	return s
}

// httpGet returns the status and body of a GET.
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// dialStatus opens a WebSocket to url and returns 101, or the status and body of the refusal.
func dialStatus(url string) (int, string, error) {
	d := websocket.Dialer{HandshakeTimeout: 60 * time.Second}
	ws, resp, err := d.Dial(url, nil)
	if err == nil {
		ws.Close()
		return http.StatusSwitchingProtocols, "", nil
	}
	if resp == nil {
		return 0, "", err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), nil
}

// TestWebShowPrintsEndpointsThatAnswer: `web show` prints the web browser's endpoints while it sleeps,
// starting nothing; puppeteer on the printed cdp_ws starts it, and `web show` then says it runs.
func TestWebShowPrintsEndpointsThatAnswer(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	site := site(t)
	show := func() api.WebBrowser {
		t.Helper()
		var b api.WebBrowser
		if err := json.Unmarshal([]byte(m.cli("web", "show", "--json")), &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	b := show()
	if b.Status != api.StatusStopped || b.CDPWS == "" || !strings.HasPrefix(b.CDPHTTP, "http://127.0.0.1:") {
		t.Fatalf("web show before any start = %+v; want stopped, with its endpoints", b)
	}
	if text := m.cli("web", "show"); !strings.Contains(text, b.CDPWS) || !strings.Contains(text, "stopped") {
		t.Errorf("web show printed %q; want its cdp_ws %s and its state", text, b.CDPWS)
	}
	if got := connectClient(t, "puppeteer", b.CDPWS, site.URL+"/web"); got.Title != "page web" {
		t.Errorf("puppeteer on the printed web endpoint drove %+v; want the page", got)
	}
	if b2 := show(); b2.Status != api.StatusRunning || b2.PID == 0 || b2.CDPWS != b.CDPWS {
		t.Errorf("web show after the client = %+v; want running on the same endpoint", b2)
	}
}

// TestPrintedEndpointsWakeTheBrowser: puppeteer on the cdp_ws store add printed, before any browser start;
// after the idle stop a probe of /json/version answers from state and starts nothing, a wrong token is 401
// and starts nothing, and playwright on cdp_http wakes the browser again.
func TestPrintedEndpointsWakeTheBrowser(t *testing.T) {
	t.Parallel()
	chrome, launches := countingChrome(t)
	m := startManager(t, "VIBE_CHROME="+chrome, "VIBE_BROWSER_IDLE_S=2")
	web := site(t)
	store := m.addStore("Sleepy")
	token := store.CDPHTTP[strings.LastIndex(store.CDPHTTP, "/")+1:]
	wrong := strings.TrimSuffix(store.CDPHTTP, token) + strings.Repeat("0", len(token))

	if code, _ := httpGet(t, wrong+"/json/version"); code != http.StatusUnauthorized {
		t.Errorf("/json/version with a wrong token = %d; want 401", code)
	}
	if code, _, err := dialStatus(strings.Replace(wrong, "http://", "ws://", 1) + "/client-x"); err != nil || code != http.StatusUnauthorized {
		t.Errorf("a client with a wrong token = %d, %v; want 401", code, err)
	}
	if code, body := httpGet(t, store.CDPHTTP+"/json/list"); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("/json/list of a store never started = %d %s; want []", code, body)
	}
	if n := launches(); n != 0 || m.running(store.Slug) {
		t.Fatalf("refusals and /json/list launched %d browsers; want none", n)
	}

	if got := connectClient(t, "puppeteer", store.CDPWS, web.URL+"/first"); got.Title != "page first" {
		t.Errorf("puppeteer right after store add drove %+v; want the page", got)
	}
	testkit.WaitFor(t, 30*time.Second, "the idle stop", func() bool { return !m.running(store.Slug) })

	code, body := httpGet(t, store.CDPHTTP+"/json/version")
	var v map[string]string
	if err := json.Unmarshal([]byte(body), &v); err != nil || code != 200 || !strings.Contains(v["Browser"], "Chrome/") ||
		!strings.HasPrefix(v["webSocketDebuggerUrl"], store.CDPWS+"/") {
		t.Errorf("/json/version of the sleeping store = %d %s; want the browser's last version on this endpoint", code, body)
	}
	if code, _ := httpGet(t, wrong+"/json/version"); code != http.StatusUnauthorized {
		t.Errorf("/json/version with a wrong token = %d; want 401", code)
	}
	if n := launches(); n != 1 || m.running(store.Slug) {
		t.Fatalf("probes of the sleeping store: %d launches, running %v; want 1 and stopped", n, m.running(store.Slug))
	}

	if got := connectClient(t, "playwright", store.CDPHTTP, web.URL+"/again"); got.Title != "page again" {
		t.Errorf("playwright after the idle stop drove %+v; want the page", got)
	}
	// Counted before the next client: with a 2 s idle window the browser may stop again while node starts.
	if n := launches(); n != 2 {
		t.Errorf("%d launches; want 2 (the first client, and the one after the idle stop)", n)
	}
	for _, u := range connectClient(t, "puppeteer", store.CDPWS, web.URL+"/third").URLs {
		if strings.Contains(u, "/first") || strings.Contains(u, "/again") {
			t.Errorf("a discovery client sees another client's page %s", u)
		}
	}
}

// TestClientsAtOnceWakeOneBrowser: clients connecting at the same moment to a sleeping store start one
// browser between them, and all of them are served by it.
func TestClientsAtOnceWakeOneBrowser(t *testing.T) {
	t.Parallel()
	chrome, launches := countingChrome(t)
	m := startManager(t, "VIBE_CHROME="+chrome, "VIBE_BROWSER_IDLE_S=0")
	store := m.addStore("Crowd")
	const n = 4
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			code, body, err := dialStatus(fmt.Sprintf("%s/client-crowd%d", store.CDPWS, i))
			if err != nil || code != http.StatusSwitchingProtocols {
				t.Errorf("client %d = %d %s, %v; want upgraded", i, code, body, err)
			}
		})
	}
	wg.Wait()
	if got := launches(); got != 1 {
		t.Errorf("%d clients at once launched %d browsers; want 1", n, got)
	}
	if b := m.browserOf(store.Slug); b.Status != api.StatusRunning || b.PID == 0 {
		t.Errorf("after the clients: %+v; want the one browser running", b)
	}
}

// TestSleepingStoreOverBudgetAnswers429: a store whose browser cannot start answers each client with the
// manager's error before the upgrade, and once its relaunch budget is spent, 429 with what to do.
func TestSleepingStoreOverBudgetAnswers429(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_CHROME="+faultyChrome(t, "unused"), "VIBE_BROWSER_RELAUNCH_MAX=1")
	store := m.addStore("doomed")
	for i, want := range []struct {
		status int
		code   string
	}{{http.StatusBadGateway, api.CodeStartFailed}, {http.StatusBadGateway, api.CodeStartFailed},
		{http.StatusTooManyRequests, api.CodeRelaunchBudget}} {
		status, body, err := dialStatus(store.CDPWS)
		var e api.Error
		if err != nil || json.Unmarshal([]byte(body), &e) != nil || status != want.status || e.Code != want.code {
			t.Fatalf("client #%d = %d %s, %v; want %d with code %s", i+1, status, body, err, want.status, want.code)
		}
		if want.code == api.CodeStartFailed && !strings.Contains(e.Message, "crashing at start") {
			t.Errorf("client #%d: %q does not carry Chromium's reason", i+1, e.Message)
		}
		if want.code == api.CodeRelaunchBudget && !strings.Contains(e.Message, "VIBE_BROWSER_RELAUNCH_MAX") {
			t.Errorf("the budget refusal %q does not say what to do", e.Message)
		}
	}
}

// TestVersionAnswersFromStateAfterARestart: a manager that never ran the browser still answers its
// /json/version from what the previous manager's mux knew, without starting it.
func TestVersionAnswersFromStateAfterARestart(t *testing.T) {
	t.Parallel()
	chrome, launches := countingChrome(t)
	m := startManager(t, "VIBE_CHROME="+chrome, "VIBE_BROWSER_IDLE_S=0")
	store := m.addStore("Remembered")
	if err := ensureStore(m, store.Slug); err != nil {
		t.Fatal(err)
	}
	if err := m.stop(); err != nil { // the quit barrier stops the browser
		t.Fatal(err)
	}
	m.start()
	code, body := httpGet(t, store.CDPHTTP+"/json/version")
	if code != 200 || !strings.Contains(body, `"Browser"`) || launches() != 1 || m.running(store.Slug) {
		t.Errorf("/json/version after a restart = %d %s, %d launches, running %v; want the old version, nothing started",
			code, body, launches(), m.running(store.Slug))
	}
	if code, body, err := dialStatus(store.CDPWS + "/client-back"); err != nil || code != http.StatusSwitchingProtocols {
		t.Fatalf("a client after the restart = %d %s, %v; want the browser woken", code, body, err)
	}
	if n := launches(); n != 2 || !m.running(store.Slug) {
		t.Errorf("after the client: %d launches, running %v; want 2 and running", n, m.running(store.Slug))
	}
	// The removed store's port stops answering.
	if err := m.client.DeleteStore(context.Background(), store.Slug); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(store.CDPHTTP + "/json/version"); err == nil {
		resp.Body.Close()
		t.Errorf("the removed store's endpoint still answers (%d); want its port released", resp.StatusCode)
	}
}
