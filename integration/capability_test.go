//go:build integration

package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

// TestCapabilityURLs: what ensure hands an agent is its client's capability URL (SPEC §14), on which
// puppeteer (WebSocket) and playwright (HTTP discovery) work and see only that client's pages; the URL holds no
// store token, and it opens neither another client id nor another store's mux.
func TestCapabilityURLs(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	web := site(t)
	acme, bolt := m.addStore("Acme"), m.addStore("Bolt")
	ensure := func(s api.Store, client, task string) string {
		t.Helper()
		resp, err := m.client.EnsureSession(context.Background(), api.EnsureRequest{Kind: api.KindStore, StoreID: s.ID,
			ClientID: client, BUName: s.Slug + "-" + task[:8], TaskID: task})
		if err != nil {
			t.Fatal(err)
		}
		return resp.CDPWS
	}
	capA := ensure(acme, taskA, taskA)
	token := acme.CDPWS[strings.LastIndex(acme.CDPWS, "/")+1:]
	if !strings.Contains(capA, "/c/") || !strings.HasSuffix(capA, "/client-"+taskA) || strings.Contains(capA, token) {
		t.Fatalf("ensure answered %q; want task A's capability URL, without the store token %s", capA, token)
	}
	m.mustAgent("--store acme --task "+taskB, "browser-use <<'PY'\nopen "+web.URL+"/b-page\nPY")
	for client, endpoint := range map[string]string{"puppeteer": capA, "playwright": "http" + strings.TrimPrefix(capA, "ws")} {
		got := connectClient(t, client, endpoint, web.URL+"/"+client+"-cap")
		if got.Title != "page "+client+"-cap" {
			t.Errorf("%s on the capability URL opened %q; want its page", client, got.Title)
		}
		for _, u := range got.URLs {
			if strings.Contains(u, "/b-page") {
				t.Errorf("%s on task A's capability URL sees task B's page %s", client, u)
			}
		}
	}
	asB := strings.TrimSuffix(capA, taskA) + taskB
	port := func(u string) string { return strings.Split(strings.TrimPrefix(u, "ws://127.0.0.1:"), "/")[0] }
	onBolt := strings.Replace(capA, port(capA), port(bolt.CDPWS), 1)
	for what, u := range map[string]string{"task B with task A's capability": asB, "store Bolt's mux with Acme's capability": onBolt} {
		if code, body, err := dialStatus(u); err != nil || code != http.StatusUnauthorized {
			t.Errorf("%s = %d %q, %v; want 401", what, code, body, err)
		}
	}
}
