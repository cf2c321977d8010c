package clusterhost

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/config"
	"vibebrowser/mux"
	"vibebrowser/mux/clientid"
	"vibebrowser/mux/downloads"
	"vibebrowser/state"
)

// The tasks of the rig's host1: taskA uses the store, taskB another store.
const (
	taskA = "a1b2c3d4-0000-4000-8000-00000000000a"
	taskB = "a1b2c3d4-0000-4000-8000-00000000000b"
)

// arrivalRig is host1's door answering arrivals (a real door, real TLS), its state with a store placed on
// host3 and its tasks, and what its Keep hooks were given; host2 and host3 dial it with their own certificates.
type arrivalRig struct {
	t       *testing.T
	cfg     *config.Config
	store   state.Store
	folder  string // taskA's downloads folder
	addr    string
	dialers map[string]*cluster.DoorDialer

	mu         sync.Mutex // guards the fields below
	downloaded []downloads.Download
	steps      []mux.TimelineEvent
	faults     []api.Event
	cuts       []string // task, client and message of each Keep.Cut
}

func startArrivals(t *testing.T) *arrivalRig {
	t.Helper()
	return startArrivalsWith(t, nil)
}

// startArrivalsWith is startArrivals with env's VIBE_* settings on host1.
func startArrivalsWith(t *testing.T, env map[string]string) *arrivalRig {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca")
	if err := cluster.Init(ca); err != nil {
		t.Fatal(err)
	}
	ids := map[string]*cluster.Identity{}
	for _, h := range []string{"host1", "host2", "host3"} {
		home := t.TempDir()
		if err := cluster.Join(ca, home, h, ""); err != nil {
			t.Fatal(err)
		}
		id, err := cluster.LoadIdentity(home)
		if err != nil {
			t.Fatal(err)
		}
		ids[h] = id
	}
	home := t.TempDir()
	cfg, err := config.FromEnv(func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return map[string]string{"VIBE_HOME": home, "VIBE_DOWNLOAD_MAX_MB": "1"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	r := &arrivalRig{t: t, cfg: cfg, dialers: map[string]*cluster.DoorDialer{}}
	if r.store, err = db.CreateStore(ctx, state.Store{Name: "Far Shop", Backend: state.BackendChrome}); err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateStore(ctx, state.Store{Name: "Near Shop", Backend: state.BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	for task, store := range map[string]string{taskA: r.store.ID, taskB: other.ID} {
		if _, err := db.UpsertTask(ctx, state.Task{ID: task, StoreID: store, Status: state.TaskRunning}); err != nil {
			t.Fatal(err)
		}
	}
	r.folder = cfg.Path("downloads", r.store.Slug, taskA)
	a := &arrivals{host: "host1", cfg: cfg, db: db, log: zerolog.Nop(),
		runs: func(context.Context, string, string) string { return "host3" },
		keep: Keep{
			DownloadDir: func(sp browsers.Spec, client string) string {
				dir := cfg.Path("downloads", sp.Slug, clientid.OwnerDir(client))
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Error(err)
				}
				return dir
			},
			Downloaded: func(sp browsers.Spec, d downloads.Download) { // in state too, as the manager's record
				if _, err := db.RecordDownload(ctx, state.Download{Key: sp.Key, TaskID: d.OwnerDir, ClientID: d.ClientID,
					OwnerDir: d.OwnerDir, GUID: d.GUID, URL: d.URL, Name: d.Name, Path: d.Path, Size: d.Size, SHA256: d.SHA256, At: d.At}); err != nil {
					t.Error(err)
				}
				r.mu.Lock()
				r.downloaded = append(r.downloaded, d)
				r.mu.Unlock()
			},
			TabStep: func(_ browsers.Spec, ev mux.TimelineEvent) { r.mu.Lock(); r.steps = append(r.steps, ev); r.mu.Unlock() },
			Fault:   func(_, _ string, ev api.Event) { r.mu.Lock(); r.faults = append(r.faults, ev); r.mu.Unlock() },
			Cut: func(_ browsers.Spec, task, client, msg string) {
				r.mu.Lock()
				r.cuts = append(r.cuts, task+" "+client+" "+msg)
				r.mu.Unlock()
			},
		}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	door := cluster.NewDoorServer(ln, ids["host1"].ServerTLS(), cluster.PeerHost, func(string, string) (func(net.Conn), error) {
		return nil, errors.New("no client's bytes in this test")
	}, zerolog.Nop())
	door.HandleExchange(kindDownload, a.takeDownload)
	door.HandleExchange(kindSteps, a.takeSteps)
	door.HandleExchange(kindFault, a.takeFault)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- door.Serve(sctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("door Serve: %v", err)
		}
	})
	for _, h := range []string{"host2", "host3"} {
		d := cluster.NewDoorDialer(ids[h].ClientTLS(), zerolog.Nop())
		t.Cleanup(d.Close)
		r.dialers[h] = d
	}
	return r
}

// send sends an exchange of kind from host with head and body (declared size bytes of it).
func (r *arrivalRig) send(from, kind string, head any, body []byte, size int64) error {
	_, err := r.exchange(from, kind, head, body, size)
	return err
}

// exchange is send, with the answer.
func (r *arrivalRig) exchange(from, kind string, head any, body []byte, size int64) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.dialers[from].Exchange(ctx, "host1", r.addr, r.store.ID, kind, head, bytes.NewReader(body), size, 4<<10)
}

// deliver sends h (with content) from host3 as its Deliver does, and returns where host1 says the client finds it.
func (r *arrivalRig) deliver(h downloadHead, content string) string {
	r.t.Helper()
	b, err := r.exchange("host3", kindDownload, h, []byte(content), int64(len(content)))
	if err != nil {
		r.t.Fatalf("download %s: %v", h.GUID, err)
	}
	var ans deliveredAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		r.t.Fatalf("download %s answered %q: %v", h.GUID, b, err)
	}
	return ans.Path
}

// download is a well-formed header of content for taskA's client.
func download(name, content string) downloadHead {
	sum := sha256.Sum256([]byte(content))
	return downloadHead{OwnerDir: taskA, Client: taskA, GUID: "guid-" + name, URL: "https://site.test/" + name, Name: name,
		Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:]), At: time.Now()}
}

func (r *arrivalRig) recorded() []downloads.Download {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.downloaded)
}

// A download the store's host sends lands in its task's folder as a local one does (0600, never over another
// file) and is recorded with what the header said; the same download sent again (its answer was lost) does not
// land twice.
func TestDownloadArrives(t *testing.T) {
	r := startArrivals(t)
	for i, content := range []string{"first\n", "second\n", "first\n"} {
		if err := r.send("host3", kindDownload, download("report.csv", content), []byte(content), int64(len(content))); err != nil {
			t.Fatalf("download %d: %v", i, err)
		}
	}
	want := map[string]string{"report.csv": "first\n", "report (1).csv": "second\n"}
	for name, content := range want {
		p := filepath.Join(r.folder, name)
		b, err := os.ReadFile(p)
		if err != nil || string(b) != content {
			t.Errorf("%s holds %q (%v); want %q", p, b, err, content)
		}
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v); want 0600", p, fi.Mode(), err)
		}
	}
	got := r.recorded()
	if len(got) != 2 || got[0].ClientID != taskA {
		t.Fatalf("recorded %+v; want the two downloads of %s", got, taskA)
	}
	if d := got[1]; d.Name != "report (1).csv" || d.Path != filepath.Join(r.folder, "report (1).csv") || d.Size != 7 ||
		d.OwnerDir != taskA || d.GUID != "guid-report.csv" || d.URL != "https://site.test/report.csv" || d.Host != "" {
		t.Errorf("the second download recorded as %+v; want report (1).csv of %s with its header's record", d, taskA)
	}
	if left := testkit.Files(r.cfg.Path("downloads", r.store.Slug, deliveringDir)); len(left) != 0 {
		t.Errorf("the staging folder keeps %q; want nothing", left)
	}
}

// A download's name is made safe as a local one's is and never lands over anything already in the folder (a
// symlink the agent user put there, a file whose name differs only in case); a header that breaks a rule, a
// body that is not what the header says, or a sender that does not run the store is refused, and nothing of
// it is kept.
func TestDownloadArrivalsRefused(t *testing.T) {
	r := startArrivals(t)
	victim := filepath.Join(t.TempDir(), "victim")
	for path, content := range map[string]string{victim: "precious\n", filepath.Join(r.folder, "report.csv"): "mine\n"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim, filepath.Join(r.folder, "link.csv")); err != nil {
		t.Fatal(err)
	}

	landed := []struct{ name, sent, file string }{
		{"a name that climbs out", "../../../etc/passwd", "_.._.._etc_passwd"},
		{"a NUL in the name", "evil\x00.csv", "evil_.csv"},
		{"a hidden name", ".bashrc", "bashrc"},
		{"the name of a symlink in the folder", "link.csv", "link (1).csv"},
		{"a name another file has in another case", "REPORT.csv", "REPORT.csv"},
	}
	for _, tt := range landed {
		t.Run(tt.name, func(t *testing.T) {
			if err := r.send("host3", kindDownload, download(tt.sent, tt.file), []byte(tt.file), int64(len(tt.file))); err != nil {
				t.Fatalf("download named %q: %v", tt.sent, err)
			}
			if b, err := os.ReadFile(filepath.Join(r.folder, tt.file)); err != nil || string(b) != tt.file {
				t.Errorf("download named %q: %s holds %q (%v); want it there", tt.sent, tt.file, b, err)
			}
		})
	}

	sum := func(s string) string { b := sha256.Sum256([]byte(s)); return hex.EncodeToString(b[:]) }
	big := strings.Repeat("x", 1<<20+1)
	twoCases := json.RawMessage(`{"owner_dir":"` + taskA + `","client":"` + taskA + `","guid":"g","url":"u","name":"ok.csv",` +
		`"Name":"../../x","size":2,"sha256":"` + sum("ok") + `","at":"2026-01-02T03:04:05Z"}`)
	unknown := json.RawMessage(`{"owner_dir":"` + taskA + `","client":"` + taskA + `","guid":"g","url":"u","name":"ok.csv",` +
		`"path":"/etc/passwd","size":2,"sha256":"` + sum("ok") + `","at":"2026-01-02T03:04:05Z"}`)
	with := func(f func(*downloadHead)) downloadHead { h := download("ok.csv", "ok"); f(&h); return h }
	refused := []struct {
		name, from string
		head       any
		body       string
		want       string
	}{
		{"a size that is not the body's", "host3", with(func(h *downloadHead) { h.Size = 1 }), "ok", "a download's size is its body's"},
		{"a sha256 that is not the body's", "host3", with(func(h *downloadHead) { h.SHA256 = sum("ko") }), "ok", "not to the " + sum("ko")},
		{"a sha256 out of form", "host3", with(func(h *downloadHead) { h.SHA256 = "../" }), "ok", "64 lowercase hex digits"},
		{"no GUID", "host3", with(func(h *downloadHead) { h.GUID = "" }), "ok", "a download's GUID is 1 to 128 bytes"},
		{"over VIBE_DOWNLOAD_MAX_MB", "host3", download("big.bin", big), big, "VIBE_DOWNLOAD_MAX_MB=1"},
		{"a key twice, in two cases", "host3", twoCases, "ok", "exactly as named"},
		{"a key no header has", "host3", unknown, "ok", "and no other keys"},
		{"another folder than the client's", "host3", with(func(h *downloadHead) { h.OwnerDir = api.AuxClient }), "ok", "a client's downloads go to"},
		{"a folder that climbs out", "host3", with(func(h *downloadHead) { h.OwnerDir = "../" + taskA }), "ok", "a client's downloads go to"},
		{"a client id out of form", "host3", with(func(h *downloadHead) { h.Client, h.OwnerDir = "../x", "../x" }), "ok", "a client id matches"},
		{"a task of another store", "host3", with(func(h *downloadHead) { h.Client, h.OwnerDir = taskB, taskB }), "ok", "is no task of host host1 on store"},
		{"a task this host does not have", "host3", with(func(h *downloadHead) { h.Client, h.OwnerDir = taskA[:35]+"c", taskA[:35]+"c" }), "ok",
			"is no task of host host1 on store"},
		{"a host that does not run the store", "host2", download("ok.csv", "ok"), "ok", "host host2 does not run store"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			err := r.send(tt.from, kindDownload, tt.head, []byte(tt.body), int64(len(tt.body)))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !cluster.Refused(err) {
				t.Errorf("download with %s = %v; want refused: %s", tt.name, err, tt.want)
			}
		})
	}
	if err := r.send("host3", kindDownload, download("short.csv", "0123456789"), []byte("01234"), 10); err == nil {
		t.Error("a download whose body ended before its size was taken")
	}

	want := []string{"REPORT.csv", "_.._.._etc_passwd", "bashrc", "evil_.csv", "link (1).csv", "link.csv", "report.csv"}
	testkit.WaitFor(t, 5*time.Second, "the refused downloads' staging gone", func() bool {
		return len(testkit.Files(r.cfg.Path("downloads", r.store.Slug, deliveringDir))) == 0
	})
	if got := testkit.Files(r.cfg.Path("downloads")); !slices.Equal(got, prefixed(r.store.Slug+"/"+taskA+"/", want)) {
		t.Errorf("files under downloads/ = %q; want %q", got, prefixed(r.store.Slug+"/"+taskA+"/", want))
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious\n" {
		t.Errorf("the symlink's target holds %q; want it untouched", b)
	}
	if b, _ := os.ReadFile(filepath.Join(r.folder, "report.csv")); string(b) != "mine\n" {
		t.Errorf("report.csv holds %q; want the file of the other case untouched", b)
	}
	if target, err := os.Readlink(filepath.Join(r.folder, "link.csv")); err != nil || target != victim {
		t.Errorf("link.csv points at %q (%v); want it untouched", target, err)
	}
	if got := r.recorded(); len(got) != len(landed) {
		t.Errorf("%d downloads recorded; want the %d that landed", len(got), len(landed))
	}
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// The steps the store's host sends are kept on the tasks of this host that use the store, and only on those;
// a host that does not run the store cannot put a step, nor a fault, on any task.
func TestStepsArrive(t *testing.T) {
	r := startArrivals(t)
	steps := []stepWire{
		{Client: taskA, Tab: "T1", Kind: mux.TabNavigated, URL: "https://site.test/a", Title: "A"},
		{Client: taskA + "-w2", Tab: "T2", Kind: mux.TabCreated, URL: "about:blank"},
		{Client: taskB, Tab: "T3", Kind: mux.TabCreated},                     // a task of another store
		{Client: taskA[:35] + "c", Tab: "T4", Kind: mux.TabCreated},          // no task of this host
		{Client: api.AuxClient, Tab: "T5", Kind: mux.TabCreated},             // no task's
		{Client: taskA, Tab: "T1", Kind: "tab_exploded"},                     // no step's kind
		{Client: "../" + taskA, Tab: "T1", Kind: mux.TabClosed, URL: "x://"}, // no client id
		{Client: taskA, Kind: stepCut, Fault: "cancelled at 1 MiB"},          // a download cut at the quota
		{Client: taskB, Kind: stepCut, Fault: "cancelled at 1 MiB"},          // a task of another store's
	}
	body, err := json.Marshal(steps)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.send("host2", kindSteps, struct{}{}, body, int64(len(body))); err == nil || !strings.Contains(err.Error(), "host host2 does not run store") {
		t.Errorf("steps from a host that does not run the store = %v; want refused, naming the rule", err)
	}
	if err := r.send("host3", kindSteps, struct{}{}, body, int64(len(body))); err != nil {
		t.Fatalf("steps from the store's host: %v", err)
	}
	dup := []byte(`[{"client":"` + taskA + `","tab":"T1","kind":"tab_closed","Kind":"tab_created"}]`)
	if err := r.send("host3", kindSteps, struct{}{}, dup, int64(len(dup))); err == nil || !strings.Contains(err.Error(), "exactly as named") {
		t.Errorf("a step with a key in two cases = %v; want refused", err)
	}
	r.mu.Lock()
	got := slices.Clone(r.steps)
	r.mu.Unlock()
	want := []mux.TimelineEvent{{Client: taskA, Tab: "T1", Kind: mux.TabNavigated, URL: "https://site.test/a", Title: "A"},
		{Client: taskA + "-w2", Tab: "T2", Kind: mux.TabCreated, URL: "about:blank"}}
	if !slices.Equal(got, want) {
		t.Errorf("steps kept = %+v; want taskA's two alone: %+v", got, want)
	}
	r.mu.Lock()
	cuts := slices.Clone(r.cuts)
	r.mu.Unlock()
	if want := []string{taskA + " " + taskA + " cancelled at 1 MiB"}; !slices.Equal(cuts, want) {
		t.Errorf("downloads cut kept = %q; want taskA's alone: %q", cuts, want)
	}

	if err := r.send("host2", kindFault, faultHead{Kind: api.EventBrowserDied, Message: "gone"}, nil, 0); err == nil {
		t.Error("a fault told by a host that does not run the store was taken")
	}
	if err := r.send("host3", kindFault, faultHead{Kind: api.EventStoreMoved, Message: "x"}, nil, 0); err == nil {
		t.Error("an event that is no fault of a browser was taken as one")
	}
	if err := r.send("host3", kindFault, faultHead{Kind: api.EventBrowserDied, Message: "the browser exited"}, nil, 0); err != nil {
		t.Fatalf("a fault told by the store's host: %v", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.faults) != 1 || r.faults[0].Kind != api.EventBrowserDied || r.faults[0].StoreID != r.store.ID || r.faults[0].Message != "the browser exited" {
		t.Errorf("faults kept = %+v; want the store's host's browser_died alone", r.faults)
	}
}
