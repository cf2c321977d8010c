//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// A task's token opens its store's aux session (SPEC §3, §20): the real shim, run with the task's id and
// token as vibe-browser env sets them, connects the aux client on --session <slug>-aux.
func TestAuxSessionUnderATaskToken(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "shop")
	out := m.mustAgent("--store shop --task "+taskA, `test -n "$VIBE_TASK_TOKEN"
browser-use --session shop-aux <<'PY'
env BU_NAME
env BU_CDP_WS
eval 6*7
PY`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || lines[0] != "shop-aux" || !strings.HasSuffix(lines[1], "/client-"+api.AuxClient) || lines[2] != "42" {
		t.Errorf("browser-use --session shop-aux under task %s's token printed %q; want BU_NAME shop-aux, the aux "+
			"client's capability URL and 42", taskA, out)
	}
}

// The store-token URLs (cdp_ws, cdp_http) serve only the manager's own uid and root (SPEC §20): another local
// user is refused with 403 before any upgrade, naming the rule and the capability URL to use; a capability URL
// it holds opens its client.
func TestStoreTokenURLsServeOnlyTheManagerAndRoot(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a probe as another user")
	}
	other := testkit.SystemUser(t, agentUserB)
	bins := reachableBinaries(t)
	m := startManagerWith(t, bins, boundaryHome(t))
	var shop api.Store
	if err := json.Unmarshal([]byte(m.cli("store", "add", "shop", "--json")), &shop); err != nil {
		t.Fatal(err)
	}
	probe := func(url string) probeResult {
		t.Helper()
		out, err := runAs(other, []string{"PATH=/usr/bin:/bin"}, bins.probe, "ws", url)
		var r probeResult
		if jerr := json.Unmarshal(lastLine([]byte(out)), &r); jerr != nil {
			t.Fatalf("boundaryprobe ws %s: %v, %v: %s", url, err, jerr, out)
		}
		return r
	}
	for _, url := range []string{shop.CDPWS, shop.CDPWS + "/client-probe"} {
		if got := probe(url); got.OK || got.Status != http.StatusForbidden ||
			!strings.Contains(got.Body, "serve only the manager's own user and root") || !strings.Contains(got.Body, "/c/<capability>/client-<id>") {
			t.Errorf("%s's store-token URL %s: %+v; want 403 naming the rule and the capability URL", other.Name, url, got)
		}
	}
	if s, err := m.client.GetStore(context.Background(), "shop"); err != nil || s.Browser.PID > 0 {
		t.Errorf("after the refusals the store's browser is %+v, %v; want it not started", s.Browser, err)
	}

	// Root (the manager's own user here) is served on the store token.
	c, _, err := websocket.DefaultDialer.Dial(shop.CDPWS+"/client-owner", nil)
	if err != nil {
		t.Fatalf("root on the store-token URL: %v; want it served", err)
	}
	c.Close()
	// The other user on a capability URL it was handed is served.
	capURL, err := m.client.EnsureSession(context.Background(), api.EnsureRequest{Kind: api.KindStore, StoreID: shop.ID,
		ClientID: "probe", BUName: "shop", Via: api.ViaCDP})
	if err != nil {
		t.Fatal(err)
	}
	if got := probe(capURL.CDPWS); !got.OK {
		t.Errorf("%s on its capability URL %s: %+v; want it served", other.Name, capURL.CDPWS, got)
	}
}
