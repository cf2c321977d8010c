package mux

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/downloads"
)

// newClientFrom connects client id as another host's door hands a connection over (SPEC §19): its context
// names host, and it comes on its capability URL.
func newClientFrom(t *testing.T, m *Mux, id, host string) *testClient {
	t.Helper()
	ws, _, err := dialFrom(t, m, id, host)
	if err != nil {
		t.Fatalf("dial client %s from %s: %v", id, host, err)
	}
	c := &testClient{t: t, ws: ws}
	t.Cleanup(func() { ws.Close() })
	go c.read()
	return c
}

// dialFrom dials client id on its capability URL through a door of host.
func dialFrom(t *testing.T, m *Mux, id, host string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	door := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.ServeHTTP(w, r.WithContext(WithAnotherHost(r.Context(), host)))
	}))
	t.Cleanup(door.Close)
	d := websocket.Dialer{HandshakeTimeout: 5 * time.Second}
	return d.Dial("ws://"+strings.TrimPrefix(door.URL, "http://")+CapabilityPath("tok", id), nil)
}

// Two hosts' tasks named alike are not one client (SPEC §19): a client id is the host's of its first
// connection while it lives here; the same id from another host, or from this one, is refused with the rule,
// its tabs untouched; its own host connects again; the shared aux session is every host's; and once the client
// ended, its id is free again.
func TestClientIsOneHosts(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{Grace: Off, SharedClients: []string{"aux"}})
	const task = "00000001"
	first := newClientFrom(t, m, task, "host1")
	first.createTarget("about:blank")
	tabs := first.targetIDs()

	refused := func(ws *websocket.Conn, resp *http.Response, err error, from string) {
		t.Helper()
		if err == nil {
			ws.Close()
			t.Fatalf("client %s from %s was let in while host1's task of the same id lives; want 409", task, from)
		}
		if resp == nil || resp.StatusCode != http.StatusConflict {
			t.Fatalf("client %s from %s: %v (%v); want 409", task, from, err, resp)
		}
		body, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(body), "is a task's of host host1") || !strings.Contains(string(body), "give this task an id of its own") {
			t.Errorf("the refusal of %s says %q; want the rule and what to do", from, body)
		}
	}
	ws, resp, err := dialFrom(t, m, task, "host2")
	refused(ws, resp, err, "host2")
	ws, resp, err = dialMux(t, m, CapabilityPath("tok", task), nil)
	refused(ws, resp, err, "the store's own host")
	if ids := first.targetIDs(); !slices.Equal(ids, tabs) {
		t.Fatalf("host1's task sees %q after the refusals; want its tabs %q", ids, tabs)
	}

	// Its own host again: the newer connection takes the client over, as on one host.
	again := newClientFrom(t, m, task, "host1")
	if ids := again.targetIDs(); !slices.Equal(ids, tabs) {
		t.Errorf("host1's task's second connection sees %q; want its tabs %q", ids, tabs)
	}

	// The aux session is every task's, from every host.
	aux1, aux2 := newClientFrom(t, m, "aux", "host1"), newClientFrom(t, m, "aux", "host2")
	aux1.ws.Close()
	aux2.ws.Close()

	// Once host1's task's client ended (no grace here), its id is free.
	again.ws.Close()
	testkit.WaitFor(t, 5*time.Second, "host1's task's client to end", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.clients[task] == nil
	})
	other := newClientFrom(t, m, task, "host2")
	for _, id := range other.targetIDs() {
		if slices.Contains(tabs, id) {
			t.Errorf("host2's task of the freed id sees %s, a tab of host1's task", id)
		}
	}
}

// A client another host's door handed over is that host's: the mux says so of it (ClientHost), of each step
// of its tabs and of each of its downloads, so that the manager sends them to the client's host; a local
// client's say nothing, and a client the mux never saw is not known.
func TestAnotherHostsClient(t *testing.T) {
	fb := newFakeBrowser(t)
	root := t.TempDir()
	var mu sync.Mutex // guards the fields below
	var steps []TimelineEvent
	var done []downloads.Download
	m := startMux(t, fb, Config{DownloadDir: root, Hooks: Hooks{
		Timeline: func(ev TimelineEvent) {
			mu.Lock()
			steps = append(steps, ev)
			mu.Unlock()
		},
		Downloaded: func(d downloads.Download) {
			mu.Lock()
			done = append(done, d)
			mu.Unlock()
		}}})
	const far, near = "task-far", "task-near"
	fc := newClientFrom(t, m, far, "host1")
	nc := newClient(t, m, near)
	farTab, nearTab := fc.createTarget("about:blank"), nc.createTarget("about:blank")
	fb.beginDownload(farTab, "g-far", "far.csv")
	fb.completeDownload("g-far", "far")
	fb.beginDownload(nearTab, "g-near", "near.csv")
	fb.completeDownload("g-near", "near")
	testkit.WaitFor(t, 5*time.Second, "both tabs' steps and both downloads", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(steps) >= 2 && len(done) == 2
	})

	mu.Lock()
	defer mu.Unlock()
	hostOf := map[string]string{far: "host1", near: ""}
	for _, ev := range steps {
		if want, ok := hostOf[ev.Client]; !ok || ev.Host != want {
			t.Errorf("the step %s of %s's tab says host %q; want %q", ev.Kind, ev.Client, ev.Host, want)
		}
	}
	for _, d := range done {
		if want := hostOf[d.ClientID]; d.Host != want {
			t.Errorf("the download %s of %s says host %q; want %q", d.Name, d.ClientID, d.Host, want)
		}
	}
	tests := []struct {
		id, host string
		known    bool
	}{{far, "host1", true}, {near, "", true}, {"task-never", "", false}}
	for _, tt := range tests {
		if host, known := m.Operator().ClientHost(tt.id); host != tt.host || known != tt.known {
			t.Errorf("ClientHost(%q) = %q, %v; want %q, %v", tt.id, host, known, tt.host, tt.known)
		}
	}
}

// A client of another host asks for its own copy in a folder of its own host: the mux makes none on this one,
// but hands the download and the request to Hooks.Deliver before the client hears "completed", and tells it
// the path the hook answered; a delivery that failed tells it the owner folder's file here.
func TestAnotherHostsClientsOwnPath(t *testing.T) {
	fb := newFakeBrowser(t)
	root := t.TempDir()
	var mu sync.Mutex // guards asked
	asked := map[string]*downloads.OwnCopy{}
	m := startMux(t, fb, Config{DownloadDir: root, Hooks: Hooks{
		Deliver: func(d downloads.Download, own *downloads.OwnCopy) (string, bool) {
			mu.Lock()
			asked[d.GUID] = own
			mu.Unlock()
			if d.Host != "host1" || d.GUID == "g-lost" {
				return "", false
			}
			return "/on/host1/" + d.GUID, true
		}}})
	dir := t.TempDir()
	fc := newClientFrom(t, m, "task-far", "host1")
	fc.call("Browser.setDownloadBehavior", `{"behavior":"allowAndName","downloadPath":"`+dir+`","eventsEnabled":true}`, "")
	tab := fc.createTarget("about:blank")
	for _, g := range []string{"g-sent", "g-lost"} {
		fb.beginDownload(tab, g, g+".csv")
		fb.completeDownload(g, g)
	}
	for guid, want := range map[string]string{"g-sent": "/on/host1/g-sent", "g-lost": filepath.Join(root, "task-far", "g-lost.csv")} {
		testkit.WaitFor(t, 5*time.Second, "completed "+guid, func() bool { return len(progress(fc, guid, "completed")) > 0 })
		var done struct{ FilePath string }
		json.Unmarshal(progress(fc, guid, "completed")[0].Params, &done)
		if done.FilePath != want {
			t.Errorf("completed %s: filePath = %q; want %q", guid, done.FilePath, want)
		}
		mu.Lock()
		own := asked[guid]
		mu.Unlock()
		if own == nil || *own != (downloads.OwnCopy{Dir: dir, Exact: true}) {
			t.Errorf("Deliver(%s) asked for own copy %+v; want %s, exact", guid, own, dir)
		}
	}
	if left := testkit.Files(dir); len(left) != 0 {
		t.Errorf("the client's downloadPath on this host holds %q; want nothing (it is on the client's host)", left)
	}
}
