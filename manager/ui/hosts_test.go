package ui

import (
	"net/http"
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

// In a cluster the overview shows every host, live or unreachable, with its free memory and its stores; an
// unreachable one says why and what to do, and its stores' rows say their host is unreachable instead of a
// browser state. On a single host there is no hosts section and no host column.
func TestOverviewShowsTheHosts(t *testing.T) {
	src := &fakeSource{status: api.Status{Version: "v-test", Host: "host1",
		Hosts: []api.ClusterHost{
			{Name: "host1", Alive: true, FreeMemMB: 3200, Stores: []string{"S1"}},
			{Name: "host2", Alive: true, FreeMemMB: 800},
			{Name: "host3", Alive: true, FreeMemMB: 5000, Stores: []string{"S3"}, QuietMs: 1200,
				Unreachable: "it did not answer within 1s"},
		},
		Stores: []api.Store{{ID: "S1", Name: "Near Shop", Slug: "near-shop", Host: "host1"},
			{ID: "S3", Name: "Far Shop", Slug: "far-shop", Host: "host3"}},
		Browsers: []api.Browser{{Key: "S1", Slug: "near-shop", Status: api.StatusRunning, Host: "host1", PID: 7},
			{Key: "S3", Slug: "far-shop", Status: api.StatusStopped, Host: "host3"},
			{Key: api.WebKey, Slug: api.WebKey, Host: "host1"}}}}
	u := startUI(t, src)
	cookie := u.login(t)
	page := body(t, u.do(t, "GET", "/", map[string]string{"Cookie": cookie, "Accept": "text/html"}))
	for _, want := range []string{`<section id="hosts-section">`, "3 hosts · 1 unreachable",
		`data-host="host1"`, "this host", "3.1 GB free", "1 store · 1 running",
		`data-host="host2"`, "800 MB free", "0 stores · 0 running",
		`<article class="host-card away" data-host="host3">`, "1 running at its last heartbeat, 1 s ago", "Unreachable: it did not answer within 1s.",
		"vibe-browser status on host3", "<th>Host</th>", `<td class="host away">host3</td>`,
		`<span class="pill host unreachable">host unreachable</span>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the overview of host1 lacks %q", want)
		}
	}

	single, _ := storeUI(t)
	cookie = single.login(t)
	resp := single.do(t, "GET", "/", map[string]string{"Cookie": cookie, "Accept": "text/html"})
	page = body(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<section id="hosts-section" hidden>`) ||
		strings.Contains(page, "<th>Host</th>") {
		t.Errorf("a single host's overview shows hosts:\n%s", page)
	}
}

// On a host of a cluster, a client named as a task this host does not know is another host's task; on a
// single host it stays a client that named itself.
func TestClientKindOfAnotherHostsTask(t *testing.T) {
	other := "a1a1a1a1-0000-4000-8000-00000000000a"
	tests := []struct {
		id      string
		cluster bool
		want    string
	}{
		{other, true, "task"},
		{other, false, "named"},
		{"not-a-task", true, "named"},
		{task, true, "task"},
	}
	for _, tt := range tests {
		if got, _ := clientKindIn(tt.id, map[string]bool{task: true}, tt.cluster); got != tt.want {
			t.Errorf("clientKindIn(%q, cluster %v) = %q; want %q", tt.id, tt.cluster, got, tt.want)
		}
	}
}
