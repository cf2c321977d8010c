package cli

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/api"
)

// serveAPI serves routes on a fresh home's real unix socket and returns the home.
func serveAPI(t *testing.T, routes *http.ServeMux) string {
	t.Helper()
	home, err := os.MkdirTemp("", "cli-") // short: a unix socket path has at most 104-108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	sock := api.SocketPath(home)
	if err := os.MkdirAll(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: routes}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return home
}

func answerJSON(v any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { json.NewEncoder(w).Encode(v) }
}

// lineOf returns the first line of out that starts with prefix.
func lineOf(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

func TestHandoffListAllShowsNotes(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	hs := []api.Handoff{
		{ID: "aaaa1111", Status: api.HandoffDone, Store: "acme-shop", TaskID: "a1b2c3d4-0001", Reason: "Solve the captcha",
			Note: "done:\ncode 4711", CreatedAt: at, Deadline: at.Add(time.Hour)},
		{ID: "bbbb2222", Status: api.HandoffPending, Store: "acme-shop", Reason: "Confirm\tthe payout", CreatedAt: at, Deadline: at.Add(time.Hour)},
	}
	routes := http.NewServeMux()
	routes.HandleFunc("GET "+api.PathHandoffs, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("status") != "" {
			http.Error(w, "want every handoff for --all", http.StatusBadRequest)
			return
		}
		answerJSON(hs)(w, r)
	})
	home := serveAPI(t, routes)

	code, out, errOut := run(t, "--home", home, "handoff", "list", "--all")
	if code != 0 {
		t.Fatalf("handoff list --all: exit %d (%s)", code, errOut)
	}
	if head := strings.Fields(lineOf(out, "HANDOFF")); len(head) < 3 || head[1] != "STATUS" || strings.Join(head[len(head)-2:], " ") != "REASON NOTE" {
		t.Errorf("handoff list --all header %q; want STATUS … REASON and NOTE last", head)
	}
	if l := strings.Join(strings.Fields(lineOf(out, "aaaa1111")), " "); !strings.HasPrefix(l, "aaaa1111 done ") ||
		!strings.HasSuffix(l, "Solve the captcha done: code 4711") {
		t.Errorf("answered handoff line %q; want its status and its note on one line after the reason", l)
	}
	if l := strings.Join(strings.Fields(lineOf(out, "bbbb2222")), " "); !strings.HasSuffix(l, "Confirm the payout -") {
		t.Errorf("pending handoff line %q; want - for no note", l)
	}

	code, out, errOut = run(t, "--home", home, "handoff", "list", "--all", "--json")
	var got []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil || len(got) != 2 {
		t.Fatalf("handoff list --all --json: exit %d (%s)\n%s", code, errOut, out)
	}
	if got[0]["note"] != "done:\ncode 4711" || got[0]["status"] != "done" {
		t.Errorf("handoff list --all --json [0] = %v; want the note as given, status done", got[0])
	}
}

func TestDownloadsNameTheWorkerSlot(t *testing.T) {
	const task = "a1b2c3d4-0000-4000-8000-000000000001"
	ds := []api.Download{
		{ID: 1, Slug: "acme-shop", Task: task, Client: task, OwnerDir: task, Name: "a.csv", Path: "/d/a.csv"},
		{ID: 2, Slug: "acme-shop", Task: task, Client: task + "-w2", OwnerDir: task, Name: "b.csv", Path: "/d/b.csv"},
		{ID: 3, Slug: "acme-shop", Client: "aux", OwnerDir: "aux", Name: "c.csv", Path: "/d/c.csv"},
		{ID: 4, Slug: "acme-shop", OwnerDir: "unattributed", Name: "d.csv", Path: "/d/d.csv"},
		{ID: 5, Slug: "acme-shop", Client: "shop-w0", OwnerDir: "shop-w0", Name: "e.csv", Path: "/d/e.csv"},
	}
	routes := http.NewServeMux()
	routes.HandleFunc("GET "+api.PathDownloads, answerJSON(ds))
	home := serveAPI(t, routes)
	code, out, errOut := run(t, "--home", home, "downloads")
	if code != 0 {
		t.Fatalf("downloads: exit %d (%s)", code, errOut)
	}
	for path, want := range map[string]string{"/d/a.csv": task, "/d/b.csv": task + " w2", "/d/c.csv": "aux",
		"/d/d.csv": "unattributed", "/d/e.csv": "shop-w0"} {
		var l string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasSuffix(line, path) {
				l = line
			}
		}
		if !strings.Contains(strings.Join(strings.Fields(l), " "), " acme-shop "+want+" 0 ") {
			t.Errorf("downloads line of %s = %q; want OWNER %q", path, l, want)
		}
	}
}

// TestTaskSetWithoutStoreSendsNoStore: a status report must not name a store it was not given, or the
// manager would have to guess whether "" means "none" (it keeps the task's store; state tests that side).
func TestTaskSetWithoutStoreSendsNoStore(t *testing.T) {
	var bodies []map[string]any
	routes := http.NewServeMux()
	routes.HandleFunc("PUT "+api.PathTask, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		bodies = append(bodies, body)
		answerJSON(api.Task{ID: r.PathValue("id"), Store: "kept", Status: body["status"].(string)})(w, r)
	})
	home := serveAPI(t, routes)
	for _, args := range [][]string{{"--status", "waiting"}, {"--store", "acme-shop", "--status", "running"}} {
		if code, _, errOut := run(t, append([]string{"--home", home, "task", "set", "a1b2c3d4-0001"}, args...)...); code != 0 {
			t.Fatalf("task set %v: exit %d (%s)", args, code, errOut)
		}
	}
	if len(bodies) != 2 {
		t.Fatalf("PUT bodies %v; want two", bodies)
	}
	if _, named := bodies[0]["store"]; named || bodies[0]["status"] != "waiting" {
		t.Errorf("task set --status waiting sent %v; want only the status", bodies[0])
	}
	if bodies[1]["store"] != "acme-shop" || bodies[1]["status"] != "running" {
		t.Errorf("task set --store acme-shop --status running sent %v", bodies[1])
	}
}
