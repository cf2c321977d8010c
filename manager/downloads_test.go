package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/mux/downloads"
	"vibebrowser/state"
)

// tempManager is a manager on a temp home, not serving; env sets knobs.
func tempManager(t *testing.T, env map[string]string) *Manager {
	t.Helper()
	vars := map[string]string{"VIBE_HOME": t.TempDir(), "PATH": "/nonexistent", "VIBE_PROXY_PORT_BASE": strconv.Itoa(testkit.ManagerPortBase)}
	for k, v := range env {
		vars[k] = v
	}
	cfg, err := config.FromEnv(func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(cfg.Path("state.db"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := newManager(ctx, cfg, testkit.Log(t), db, "test")
	t.Cleanup(func() {
		m.fleet.Quit(false)
		cancel()
		db.Close()
	})
	return m
}

// storeSpec adds a chrome store and returns its spec.
func storeSpec(t *testing.T, m *Manager, name string) browsers.Spec {
	t.Helper()
	s, err := m.db.CreateStore(context.Background(), state.Store{Name: name, Backend: state.BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := browsers.StoreSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

func TestPruneDownloads(t *testing.T) {
	m := tempManager(t, map[string]string{"VIBE_DOWNLOAD_KEEP_DAYS": "30"})
	ctx := context.Background()
	sp := storeSpec(t, m, "Shop")
	now := time.Now()
	old, recent := now.Add(-31*24*time.Hour), now.Add(-29*24*time.Hour)
	const gone, busy, fresh = "a1b2c3d4-0000-4000-8000-00000000000a", "a1b2c3d4-0000-4000-8000-00000000000b", "a1b2c3d4-0000-4000-8000-00000000000c"
	if _, err := m.db.UpsertTask(ctx, state.Task{ID: busy, StoreID: sp.Key, Status: state.TaskRunning, LeaseUntil: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	root := m.cfg.Path("downloads")
	testkit.WriteFiles(t, root, old, sp.Slug+"/"+gone+"/old.csv", sp.Slug+"/"+busy+"/old.csv", sp.Slug+"/manual/old.csv",
		"_web/unattributed/old.bin", sp.Slug+"/.incoming/old.crdownload", "removed-store/aux/old.csv")
	testkit.WriteFiles(t, root, old, sp.Slug+"/"+fresh+"/old.csv")
	testkit.WriteFiles(t, root, recent, sp.Slug+"/"+fresh+"/new.csv")
	for _, d := range []struct{ key, dir string }{{sp.Key, gone}, {sp.Key, fresh}, {api.WebKey, "unattributed"}} {
		if _, err := m.db.RecordDownload(ctx, state.Download{Key: d.key, OwnerDir: d.dir, GUID: "g", Name: "old.csv",
			Path: filepath.Join(root, d.dir, "old.csv"), At: old}); err != nil {
			t.Fatal(err)
		}
	}
	m.downloads.prune(ctx, now)
	want := []string{sp.Slug + "/.incoming/old.crdownload", sp.Slug + "/" + busy + "/old.csv",
		sp.Slug + "/" + fresh + "/new.csv", sp.Slug + "/" + fresh + "/old.csv"}
	sort.Strings(want)
	if got := testkit.Files(root); !slices.Equal(got, want) {
		t.Errorf("after pruning: %q; want %q", got, want)
	}
	ds, err := m.db.ListDownloads(ctx, state.DownloadFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds) != 1 || ds[0].OwnerDir != fresh {
		t.Errorf("records after pruning: %+v; want only the kept folder's", ds)
	}

	m.cfg.DownloadKeepDays = 0
	testkit.WriteFiles(t, root, old.Add(-365*24*time.Hour), sp.Slug+"/ancient/x")
	m.downloads.prune(ctx, now)
	if _, err := os.Stat(filepath.Join(root, sp.Slug, "ancient", "x")); err != nil {
		t.Errorf("VIBE_DOWNLOAD_KEEP_DAYS=0 pruned: %v", err)
	}
}

func TestRecordAndListDownloads(t *testing.T) {
	m := tempManager(t, nil)
	ctx := context.Background()
	sp := storeSpec(t, m, "Shop")
	web, err := m.fleet.WebSpec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const task = "a1b2c3d4-0000-4000-8000-000000000001"
	at := time.Unix(1700000000, 0)
	m.downloads.record(sp, downloads.Download{GUID: "g1", ClientID: task + "-w2", OwnerDir: task, URL: "http://x/r", Name: "r.csv",
		Path: "/d/r.csv", Size: 3, SHA256: "ab", At: at})
	m.downloads.record(sp, downloads.Download{GUID: "g2", ClientID: "aux", OwnerDir: "aux", Name: "a.csv", Path: "/d/a.csv", At: at.Add(time.Second)})
	m.downloads.record(web, downloads.Download{GUID: "g3", ClientID: task, OwnerDir: task, Name: "w.csv", Path: "/d/w.csv", At: at.Add(2 * time.Second)})
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{"r.csv", "a.csv", "w.csv"}},
		{"?task=" + task, []string{"r.csv", "w.csv"}},
		{"?store=Shop", []string{"r.csv", "a.csv"}},
		{"?store=" + sp.Slug + "&task=" + task, []string{"r.csv"}},
		{"?store=web", []string{"w.csv"}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			out, err := listDownloads(m, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, d := range out {
				names = append(names, d.Name)
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("GET %s%s = %q; want %q", api.PathDownloads, tt.query, names, tt.want)
			}
		})
	}
	out, err := listDownloads(m, "?store=Shop")
	if err != nil || len(out) != 2 {
		t.Fatalf("GET ?store=Shop = %v, %v; want two downloads", out, err)
	}
	first := out[0]
	if !first.At.Equal(at) {
		t.Errorf("listed at %v; want %v", first.At, at)
	}
	first.At = at // the same instant, as JSON gives it back
	want := api.Download{ID: first.ID, Store: sp.Key, Slug: sp.Slug, Task: task, Client: task + "-w2", OwnerDir: task, GUID: "g1",
		URL: "http://x/r", Name: "r.csv", Path: "/d/r.csv", Size: 3, SHA256: "ab", At: at}
	if first != want {
		t.Errorf("listed %+v; want %+v", first, want)
	}
	if aux := out[1]; aux.Task != "" {
		t.Errorf("aux's download has task %q; want none", aux.Task)
	}
	if _, err := listDownloads(m, "?store=nosuch"); err == nil {
		t.Error("GET ?store=nosuch succeeded; want not found")
	}
}

// listDownloads asks the local API for GET PathDownloads+query, as the owner.
func listDownloads(m *Manager, query string) ([]api.Download, error) {
	rec := httptest.NewRecorder()
	m.api().OwnerServer().Handler.ServeHTTP(rec, httptest.NewRequest("GET", api.PathDownloads+query, nil))
	if rec.Code != http.StatusOK {
		return nil, fmt.Errorf("%d %s", rec.Code, rec.Body)
	}
	var out []api.Download
	err := json.Unmarshal(rec.Body.Bytes(), &out)
	return out, err
}

// VIBE_DOWNLOAD_MAX_MB bounds each task's folder and its store's aux folder (the muxes ask downloadRoom),
// counted from state at boot and with each download filed, forgotten with a pruned folder; a download
// cancelled at the quota is an event and a fault in the task's timeline, and counted.
func TestDownloadQuota(t *testing.T) {
	m := tempManager(t, map[string]string{"VIBE_DOWNLOAD_MAX_MB": "2"})
	ctx := context.Background()
	sp := storeSpec(t, m, "Shop")
	const task = "a1b2c3d4-0000-4000-8000-000000000001"
	if _, err := m.db.UpsertTask(ctx, state.Task{ID: task, StoreID: sp.Key, Status: state.TaskRunning, LeaseUntil: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.db.RecordDownload(ctx, state.Download{Key: sp.Key, TaskID: task, OwnerDir: task, GUID: "g0", Name: "before.bin",
		Path: "/d/before.bin", Size: 1 << 20, At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := m.downloads.quota.load(ctx, m.db); err != nil { // as at boot
		t.Fatal(err)
	}
	m.downloads.record(sp, downloads.Download{GUID: "g1", ClientID: task, OwnerDir: task, Name: "r.csv", Path: "/d/r.csv", Size: 1000, At: time.Now()})
	rooms := []struct {
		dir  string
		want int64
	}{
		{task, 1<<20 - 1000},
		{api.AuxClient, 2 << 20},
		{"b2c3d4e5-0000-4000-8000-000000000002", 2 << 20},
		{"manual", -1},
		{"human", -1},
		{downloads.UnattributedDir, -1},
	}
	for _, tt := range rooms {
		if got := m.downloads.room(sp, tt.dir); got != tt.want {
			t.Errorf("downloadRoom(%s) = %d; want %d", tt.dir, got, tt.want)
		}
	}
	m.downloads.cut(sp, downloads.Download{GUID: "g2", ClientID: task + "-w1", OwnerDir: task, URL: "http://x/big", Name: "big\u202e.iso", Size: 3 << 20})
	evs := m.events.list()
	if len(evs) != 1 || evs[0].Kind != api.EventDownloadCancelled || evs[0].TaskID != task ||
		!strings.Contains(evs[0].Message, "VIBE_DOWNLOAD_MAX_MB=2") || !strings.Contains(evs[0].Message, `big\u202e.iso`) {
		t.Errorf("events %+v; want one download_cancelled of the task naming the knob, the page's name quoted", evs)
	}
	tl, err := m.timeline.Entries(ctx, task, 0)
	if err != nil || len(tl) == 0 || tl[len(tl)-1].Fault == nil || tl[len(tl)-1].Fault.What != api.FaultQuota {
		t.Errorf("the task's timeline %+v, %v; want a quota fault last", tl, err)
	}
	scrape := httptest.NewRecorder()
	m.metrics.Handler().ServeHTTP(scrape, httptest.NewRequest("GET", api.PathMetrics, nil))
	if want := `vibe_quota_hits_total{quota="download_bytes"} 1`; !strings.Contains(scrape.Body.String(), want) {
		t.Errorf("/metrics has no %s", want)
	}
	m.downloads.quota.forget(state.DownloadOwner{Key: sp.Key, OwnerDir: task})
	if got := m.downloads.room(sp, task); got != 2<<20 {
		t.Errorf("downloadRoom after its folder was pruned = %d; want the whole quota", got)
	}
}
