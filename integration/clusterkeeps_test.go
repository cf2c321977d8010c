//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/cluster"
)

// What a task does on a store of another host is kept on the task's host (SPEC §19 "Routing"): an agent of
// host1, through its shim, opens pages, types a password and downloads a file on a store of host3. Its file
// appears in its VIBE_DOWNLOAD_DIR on host1 with the bytes served, host1's downloads list and the task's
// timeline there have it; the timeline on host1 has the task's navigations and the shots after its calls,
// showing the page's colour, and never the password; host3 keeps its own copy and record. A task of host2
// on the same store gets none of it, and host1's task none of host2's; a crash of the store's browser reaches
// both tasks' timelines.
func TestClusterKeepsATasksWorkOnItsHost(t *testing.T) {
	ms := clusterOf(t, 3)
	ms[0].cli("store", "add", "Keep Shop", "--host", "host3")
	shop := storeNamedOn(t, ms[0], "Keep Shop")
	storeNamedOn(t, ms[1], "Keep Shop")
	storeNamedOn(t, ms[2], "Keep Shop")
	site, dl := timelineSite(t), downloadSite(t)
	const secret = "far-Pw-7731"
	envA := "--store " + shop.Slug + " --task " + taskA
	taskDir := filepath.Join(ms[0].home, "downloads", shop.Slug, taskA)

	out := ms[0].mustAgent(envA, "browser-use <<'PY'\nopen "+site.URL+"/red\neval document.title\nPY")
	if !strings.Contains(out, `"page red"`) {
		t.Fatalf("host1's first call printed %q", out)
	}
	ms[0].mustAgent(envA, "browser-use <<'PY'\nopen "+site.URL+"/login\neval document.getElementById('pw').focus(), 1\ntype "+secret+
		"\neval document.getElementById('pw').value.length\nPY")
	out = ms[0].mustAgent(envA, "echo \"$VIBE_DOWNLOAD_DIR\"\nbrowser-use <<'PY'\nopen "+dl.URL+
		"/?who=far\neval document.getElementById('dl').click(), 1\nwaitfile report.csv\nPY")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if lines[0] != taskDir || lines[len(lines)-1] != filepath.Join(taskDir, "report.csv") {
		t.Errorf("host1's agent: VIBE_DOWNLOAD_DIR %q, its download at %q; want %s and the file in it", lines[0],
			lines[len(lines)-1], taskDir)
	}
	waitContent(t, filepath.Join(taskDir, "report.csv"), "far report.csv\n")
	if b := browserOf(t, ms[2], shop.ID); b.Status != api.StatusRunning {
		t.Fatalf("Keep Shop's browser on host3: %q; want the store run there", b.Status)
	}

	// host1's downloads and the task's timeline there list it.
	var listed []api.Download
	testkit.WaitFor(t, 10*time.Second, "the download recorded on host1", func() bool {
		listed = nil
		json.Unmarshal([]byte(ms[0].cli("downloads", "--task", taskA, "--json")), &listed)
		return len(listed) == 1
	})
	if d := listed[0]; d.Task != taskA || d.Client != taskA || d.Store != shop.ID || d.Name != "report.csv" ||
		d.Path != filepath.Join(taskDir, "report.csv") || d.SHA256 != sha("far report.csv\n") || !strings.HasSuffix(d.URL, "/file/report.csv?who=far") {
		t.Errorf("host1's downloads --task %s = %+v; want report.csv in the task's folder, with its sha256 and URL", taskA, d)
	}
	// host3, which filed it, keeps its copy and record (its quota counts it).
	if b, err := os.ReadFile(filepath.Join(ms[2].home, "downloads", shop.Slug, taskA, "report.csv")); err != nil || string(b) != "far report.csv\n" {
		t.Errorf("host3's copy of the download: %q (%v)", b, err)
	}

	var tl api.Timeline
	var shots []api.Entry
	testkit.WaitFor(t, 20*time.Second, "host1's timeline of the task: its navigations, its download and a shot of the red page", func() bool {
		tl, shots = ms[0].timeline(taskA), nil
		navs, download := map[string]bool{}, false
		for _, e := range tl.Entries {
			switch {
			case e.Nav != nil:
				navs[strings.TrimPrefix(strings.TrimPrefix(e.Nav.URL, site.URL), dl.URL)] = true
			case e.Download != nil:
				download = e.Download.Name == "report.csv"
			case e.Shot != nil:
				shots = append(shots, e)
			}
		}
		red := false
		for _, s := range shots {
			red = red || strings.HasSuffix(s.Shot.URL, "/red")
		}
		return navs["/red"] && navs["/login"] && navs["/?who=far"] && download && red
	})
	calls := 0
	for _, e := range tl.Entries {
		if e.Call != nil {
			calls++
		}
	}
	if calls != 3 {
		t.Errorf("host1's timeline holds %d calls; want the task's 3", calls)
	}
	for _, s := range shots {
		if strings.HasSuffix(s.Shot.URL, "/red") {
			if got := ms[0].shotColour(taskA, s.Seq); !near(got, pageColours["red"]) {
				t.Errorf("the shot of the red page (entry %d) shows %v; want red %v", s.Seq, got, pageColours["red"])
			}
			if s.Shot.AfterOf == 0 {
				t.Errorf("the shot of the red page (entry %d) follows no call", s.Seq)
			}
		}
	}
	all, _ := json.Marshal(tl)
	if bytes.Contains(all, []byte(secret)) {
		t.Errorf("the password typed on host3's browser is in host1's timeline:\n%s", all)
	}
	if !bytes.Contains(all, []byte("[password hidden]")) {
		t.Errorf("host1's timeline hides no password; want the login call's typed text hidden:\n%s", all)
	}

	// A raw CDP client of the task asks for its own copy in a folder of host1, as playwright and puppeteer do:
	// when it hears "completed", the file is at the filePath it was told, <that folder>/<guid>, made by host1
	// (the link of host1's copy in the task's folder, not host3's file), and the folder holds nothing else.
	ownDir := t.TempDir()
	raw := dialRaw(t, capability(t, ms[0], shop, taskA).CDPWS)
	raw.must("Browser.setDownloadBehavior", map[string]any{"behavior": "allowAndName", "downloadPath": ownDir, "eventsEnabled": true}, "", nil)
	clickIn(t, raw, openDownloadPage(t, raw, dl.URL+"/?who=raw"), "dl")
	var done map[string]any
	var atDone []byte
	testkit.WaitFor(t, 40*time.Second, "completed at host1's raw client", func() bool {
		c := progressOf(raw, "completed")
		if len(c) == 0 {
			return false
		}
		done = c[0]
		atDone, _ = os.ReadFile(fmt.Sprint(done["filePath"])) // the file must be there when "completed" arrives
		return true
	})
	guid, _ := done["guid"].(string)
	if own := filepath.Join(ownDir, guid); done["filePath"] != own || string(atDone) != "raw report.csv\n" {
		t.Errorf("completed filePath = %v holding %q; want %s (host1's folder the client asked) holding the download", done["filePath"], atDone, own)
	}
	if files := testkit.Files(ownDir); !slices.Equal(files, []string{guid}) {
		t.Errorf("the client's downloadPath holds %q; want its download alone, as %s", files, guid)
	}
	onHost1, onHost3 := filepath.Join(taskDir, "report (1).csv"), filepath.Join(ms[2].home, "downloads", shop.Slug, taskA, "report (1).csv")
	waitContent(t, onHost3, "raw report.csv\n")
	waitContent(t, onHost1, "raw report.csv\n")
	own, e1 := os.Stat(filepath.Join(ownDir, guid))
	h1, e2 := os.Stat(onHost1)
	h3, e3 := os.Stat(onHost3)
	if e1 != nil || e2 != nil || e3 != nil || !os.SameFile(own, h1) || os.SameFile(own, h3) {
		t.Errorf("the client's copy is not host1's link of its task folder's file (host1 %v, host3 %v, own %v)", e2, e3, e1)
	}

	// host2's task on the same store: its own steps, none of host1's task's, and no download.
	envB := "--store " + shop.Slug + " --task " + taskB
	ms[1].mustAgent(envB, "browser-use <<'PY'\nopen "+site.URL+"/blue\neval document.title\nPY")
	testkit.WaitFor(t, 20*time.Second, "host2's timeline of its task: the blue page", func() bool {
		for _, e := range ms[1].timeline(taskB).Entries {
			if e.Nav != nil && strings.HasSuffix(e.Nav.URL, "/blue") {
				return true
			}
		}
		return false
	})
	for _, m := range []struct {
		m          *managed
		task, miss string
	}{{ms[1], taskB, "/red"}, {ms[0], taskA, "/blue"}} {
		b, _ := json.Marshal(m.m.timeline(m.task))
		if bytes.Contains(b, []byte(m.miss)) || bytes.Contains(b, []byte("report.csv")) && m.task == taskB {
			t.Errorf("the timeline of %s holds another host's task's steps (%s or its download):\n%s", m.task, m.miss, b)
		}
	}
	// A crash of host3's browser hits the active tasks on the store on every host: host3 tells host1 and host2.
	before := browserOf(t, ms[2], shop.ID)
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct {
		m    *managed
		task string
	}{{ms[0], taskA}, {ms[1], taskB}} {
		testkit.WaitFor(t, 60*time.Second, "the browser's crash or relaunch in the timeline of "+m.task, func() bool {
			for _, e := range m.m.timeline(m.task).Entries {
				if e.Fault != nil && (e.Fault.What == api.FaultCrash || e.Fault.What == api.FaultRelaunch) {
					return true
				}
			}
			return false
		})
	}

	var listedB []api.Download
	json.Unmarshal([]byte(ms[1].cli("downloads", "--json")), &listedB)
	if len(listedB) != 0 || len(testkit.Files(filepath.Join(ms[1].home, "downloads", shop.Slug))) != 0 {
		t.Errorf("host2 has downloads %+v, files %q; want none of host1's task's", listedB, testkit.Files(filepath.Join(ms[1].home, "downloads", shop.Slug)))
	}
}

// doorDialer dials doors as host m, with its certificate; doorOf is m's door.
func doorDialer(t *testing.T, m *managed) *cluster.DoorDialer {
	t.Helper()
	id, err := cluster.LoadIdentity(m.home)
	if err != nil {
		t.Fatal(err)
	}
	d := cluster.NewDoorDialer(id.ClientTLS(), zerolog.Nop())
	t.Cleanup(d.Close)
	return d
}

func doorOf(m *managed) string {
	for _, kv := range m.env {
		if v, ok := strings.CutPrefix(kv, "VIBE_ADVERTISE="); ok {
			return v
		}
	}
	return ""
}

// A host speaks through the doors for its own clients only, even with its own good certificate: host2,
// through host1's door, sends a step and a download of host1's task on host3's store, and host1 refuses both,
// naming the rule, and keeps nothing; host2 asks host3 for host1's client's tabs and pictures, and host3
// refuses, while it answers host1.
func TestClusterStepsOnlyFromTheStoresHost(t *testing.T) {
	ms := clusterOf(t, 3)
	ms[0].cli("store", "add", "Own Shop", "--host", "host3")
	shop := storeNamedOn(t, ms[0], "Own Shop")
	tab, _ := dialRaw(t, capability(t, ms[0], shop, taskA).CDPWS).createPage("about:blank") // host1's task's tab on host3
	dialer, door := doorDialer(t, ms[1]), doorOf(ms[0])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var err error
	steps := []byte(`[{"client":"` + taskA + `","tab":"T1","kind":"tab_navigated","url":"https://forged.example/"}]`)
	_, err = dialer.Exchange(ctx, "host1", door, shop.ID, "steps", struct{}{}, bytes.NewReader(steps), int64(len(steps)), 1<<10)
	if err == nil || !strings.Contains(err.Error(), "host host2 does not run store "+shop.ID) {
		t.Errorf("host2's step on host1's task = %v; want refused: only the store's host sends its clients' steps", err)
	}
	file := []byte("forged\n")
	head := map[string]any{"owner_dir": taskA, "client": taskA, "guid": "g", "url": "https://forged.example/f", "name": "forged.txt",
		"size": len(file), "sha256": sha(string(file)), "at": time.Now()}
	_, err = dialer.Exchange(ctx, "host1", door, shop.ID, "download", head, bytes.NewReader(file), int64(len(file)), 1<<10)
	if err == nil || !strings.Contains(err.Error(), "host host2 does not run store "+shop.ID) {
		t.Errorf("host2's download for host1's task = %v; want refused", err)
	}
	b, _ := json.Marshal(ms[0].timeline(taskA))
	if bytes.Contains(b, []byte("forged")) {
		t.Errorf("host1's timeline of its task holds what host2 forged:\n%s", b)
	}
	if files := testkit.Files(filepath.Join(ms[0].home, "downloads", shop.Slug)); len(files) != 0 {
		t.Errorf("host1's downloads of the store hold %q; want nothing", files)
	}

	look := map[string]any{"client": taskA}
	if _, err := dialer.Exchange(ctx, "host3", doorOf(ms[2]), shop.ID, "tabs", look, nil, 0, 1<<20); err == nil ||
		!strings.Contains(err.Error(), "is not a client of host host2 here") {
		t.Errorf("host2's look at host1's client's tabs = %v; want refused: a host looks at its own clients only", err)
	}
	shot := map[string]any{"client": taskA, "tab": tab, "width": 640, "quality": 70}
	if _, err := dialer.Exchange(ctx, "host3", doorOf(ms[2]), shop.ID, "shot", shot, nil, 0, 2<<20); err == nil ||
		!strings.Contains(err.Error(), "is not a client of host host2 here") {
		t.Errorf("host2's picture of host1's client's tab = %v; want refused", err)
	}
	tabs, err := doorDialer(t, ms[0]).Exchange(ctx, "host3", doorOf(ms[2]), shop.ID, "tabs", look, nil, 0, 1<<20)
	if err != nil || !strings.Contains(string(tabs), tab) {
		t.Errorf("host1's look at its own client's tabs = %s, %v; want its tab %s", tabs, err, tab)
	}
}
