//go:build integration

package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/mux/downloads"
)

// downloadSite serves a page (/?who=W) with download links whose files say who fetched them:
// #dl → report.csv, #pop → popup.csv in a new tab, #same → report.csv served only once two clients asked for
// it (or after 15 s), so their downloads overlap, #slow → a download that never finishes, and in the
// same-origin iframe #frame (no target of its own) #dl → frame.csv.
func downloadSite(t *testing.T) *httptest.Server {
	t.Helper()
	var mu sync.Mutex
	arrived, both := 0, make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who := r.URL.Query().Get("who")
		attach := func(name string) {
			w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
			w.Header().Set("Content-Type", "application/octet-stream")
		}
		switch {
		case r.URL.Path == "/":
			fmt.Fprintf(w, `<!doctype html><title>downloads</title><a id="dl" href="/file/report.csv?who=%[1]s">dl</a>
<a id="pop" href="/file/popup.csv?who=%[1]s" target="_blank">pop</a> <a id="same" href="/same?who=%[1]s">same</a>
<a id="slow" href="/slow">slow</a> <iframe id="frame" src="/frame?who=%[1]s"></iframe>`, who)
		case r.URL.Path == "/frame":
			fmt.Fprintf(w, `<!doctype html><a id="dl" href="/file/frame.csv?who=%s">dl</a>`, who)
		case strings.HasPrefix(r.URL.Path, "/file/"):
			name := strings.TrimPrefix(r.URL.Path, "/file/")
			attach(name)
			fmt.Fprintf(w, "%s %s\n", who, name)
		case r.URL.Path == "/same":
			mu.Lock()
			if arrived++; arrived == 2 {
				close(both)
			}
			mu.Unlock()
			select {
			case <-both:
			case <-time.After(15 * time.Second):
			}
			attach("report.csv")
			fmt.Fprintf(w, "%s same\n", who)
		case r.URL.Path == "/slow":
			attach("big.bin")
			w.Header().Set("Content-Length", "100000000")
			w.Write(make([]byte, 4096))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// waitContent waits until path holds want.
func waitContent(t *testing.T, path, want string) {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, fmt.Sprintf("%s to hold %q", path, want), func() bool {
		b, err := os.ReadFile(path)
		return err == nil && string(b) == want
	})
}

// clickIn clicks the element with id in the page of session, as a user would (a gesture, so a link with
// target=_blank opens its tab).
func clickIn(t *testing.T, c *rawCDP, session, id string) {
	t.Helper()
	if _, err := c.Call("Runtime.evaluate", map[string]any{"expression": `document.getElementById("` + id + `").click(), 1`,
		"userGesture": true}, session); err != nil {
		t.Fatal(err)
	}
}

func openDownloadPage(t *testing.T, c *rawCDP, url string) string {
	t.Helper()
	_, s := c.createPage(url)
	testkit.WaitFor(t, 15*time.Second, "the download page loaded", func() bool {
		v, err := c.evaluate(s, `document.readyState === "complete" && !!document.getElementById("dl") &&
			!!document.getElementById("frame").contentDocument.getElementById("dl")`)
		return err == nil && string(v) == "true"
	})
	return s
}

// progressOf returns c's downloadProgress events in state.
func progressOf(c *rawCDP, state string) []map[string]any {
	var out []map[string]any
	for _, e := range c.Events("Browser.downloadProgress") {
		var p map[string]any
		if json.Unmarshal(e.Params, &p) == nil && p["state"] == state {
			out = append(out, p)
		}
	}
	return out
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestDownloadPlaywrightAndAgent: the fake browser-use through the generated wrapper learns its folder from
// VIBE_DOWNLOAD_DIR and finds its download there, listed by `vibe-browser downloads`; playwright-core, as a
// new user drives it (connectOverCDP to cdp_http), gets path() and saveAs() holding the served bytes, and a
// download it cancels leaves nothing behind.
func TestDownloadPlaywrightAndAgent(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	site := downloadSite(t)
	store := m.addStore("Dl Shop")
	root := filepath.Join(m.home, "downloads", store.Slug)
	taskDir := filepath.Join(root, taskA)

	out := m.mustAgent("--store "+store.Slug+" --task "+taskA, "echo \"$VIBE_DOWNLOAD_DIR\"\nbrowser-use <<'PY'\nenv VIBE_DOWNLOAD_DIR\nopen "+site.URL+
		"/?who=agent\neval document.getElementById('dl').click(), 1\nwaitfile report.csv\nPY")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 || lines[0] != taskDir || lines[1] != taskDir {
		t.Fatalf("the agent's shell (vibe-browser env) and its browser-use call (the shim) see VIBE_DOWNLOAD_DIR %q; want %q in both", lines, taskDir)
	}
	if last := lines[len(lines)-1]; last != filepath.Join(taskDir, "report.csv") {
		t.Errorf("the agent's download appeared at %q; want %s", last, filepath.Join(taskDir, "report.csv"))
	}
	waitContent(t, filepath.Join(taskDir, "report.csv"), "agent report.csv\n")
	var listed []api.Download
	testkit.WaitFor(t, 10*time.Second, "the agent's download recorded", func() bool {
		listed = nil
		json.Unmarshal([]byte(m.cli("downloads", "--task", taskA, "--json")), &listed)
		return len(listed) == 1
	})
	d := listed[0]
	if d.Task != taskA || d.Client != taskA || d.Store != store.ID || d.Slug != store.Slug || d.Name != "report.csv" ||
		d.Path != filepath.Join(taskDir, "report.csv") || d.Size != int64(len("agent report.csv\n")) ||
		d.SHA256 != sha("agent report.csv\n") || !strings.HasSuffix(d.URL, "/file/report.csv?who=agent") {
		t.Errorf("downloads --task %s --json = %+v; want the agent's report.csv with its size and sha256", taskA, d)
	}
	// A --worker slot of the task files into the task's folder.
	out = m.mustAgent("--store "+store.Slug+" --task "+taskA, "browser-use --worker 2 <<'PY'\nenv VIBE_DOWNLOAD_DIR\nopen "+site.URL+
		"/?who=worker\neval document.getElementById('dl').click(), 1\nwaitfile report (1).csv\nPY")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); lines[0] != taskDir {
		t.Errorf("worker 2's VIBE_DOWNLOAD_DIR = %q; want its task's %q", lines[0], taskDir)
	}
	waitContent(t, filepath.Join(taskDir, "report (1).csv"), "worker report.csv\n")
	testkit.WaitFor(t, 10*time.Second, "the worker's download recorded under the task", func() bool {
		listed = nil
		json.Unmarshal([]byte(m.cli("downloads", "--task", taskA, "--json")), &listed)
		return len(listed) == 2 && listed[1].Client == taskA+"-w2" && listed[1].Name == "report (1).csv"
	})

	if err := json.Unmarshal([]byte(m.cli("store", "show", store.Slug, "--json")), &store); err != nil {
		t.Fatal(err)
	}
	pw := startNodeScript(t, "downloads_playwright.js", store.CDPHTTP, site.URL+"/?who=playwright")
	got := pw.expect("download")
	if got["pathBytes"] != "playwright report.csv\n" || got["saveAsBytes"] != "playwright report.csv\n" || got["suggested"] != "report.csv" {
		t.Errorf("playwright download: %v; want path() and saveAs() to hold the served bytes", got)
	}
	if c := pw.expect("canceled"); c["failure"] != "canceled" {
		t.Errorf("playwright's canceled download: %v", c)
	}
	var pwFile string
	testkit.WaitFor(t, 10*time.Second, "playwright's download filed in its client's folder", func() bool {
		matches, _ := filepath.Glob(filepath.Join(root, "anon-*", "report.csv"))
		if len(matches) == 1 {
			pwFile = matches[0]
		}
		return pwFile != ""
	})
	waitContent(t, pwFile, "playwright report.csv\n")
	testkit.WaitFor(t, 10*time.Second, "nothing of the canceled download left", func() bool {
		for _, f := range testkit.Files(root) {
			if strings.Contains(f, "big.bin") || strings.HasPrefix(f, downloads.IncomingDir) {
				return false
			}
		}
		return true
	})
	pw.send("close")
	pw.wait()

	text := m.cli("downloads", "--store", store.Slug)
	if !strings.Contains(text, filepath.Join(taskDir, "report.csv")) || !strings.Contains(text, pwFile) {
		t.Errorf("downloads --store %s:\n%s\nwant both files", store.Slug, text)
	}
	if all, err := m.client.ListDownloads(context.Background(), "", "web"); err != nil || len(all) != 0 {
		t.Errorf("the web browser's downloads = %v, %v; want none", all, err)
	}
}

// TestDownloadSameNameTwoTasks: puppeteer-core with its own Browser.setDownloadBehavior (task A) and a raw CDP
// client with allowAndName (task B) download report.csv at the same moment: two files in two task folders,
// and each client's own copy where it asked; a third report.csv in task B becomes "report (1).csv"; a
// download from a popup belongs to the popup's opener's task, one from a subframe to the page's; a client
// that denies downloads gets none while another's still works.
func TestDownloadSameNameTwoTasks(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	site := downloadSite(t)
	m.cli("store", "add", "Two Tasks")
	if err := ensureStore(m, "two-tasks"); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(m.home, "downloads", "two-tasks")
	pupDir, rawDir := t.TempDir(), t.TempDir()

	pup := startNodeScript(t, "downloads_puppeteer.js", m.storeWS("two-tasks", taskA), site.URL+"/?who=puppeteer", pupDir)
	pup.expect("ready")
	raw := dialRaw(t, m.storeWS("two-tasks", taskB))
	raw.must("Browser.setDownloadBehavior", map[string]any{"behavior": "allowAndName", "downloadPath": rawDir, "eventsEnabled": true}, "", nil)
	rs := openDownloadPage(t, raw, site.URL+"/?who=raw")

	pup.send("click")
	clickIn(t, raw, rs, "same")
	pup.expect("clicked")
	waitContent(t, filepath.Join(root, taskA, "report.csv"), "puppeteer same\n")
	waitContent(t, filepath.Join(root, taskB, "report.csv"), "raw same\n")
	waitContent(t, filepath.Join(pupDir, "report.csv"), "puppeteer same\n")
	testkit.WaitFor(t, 10*time.Second, "completed at the raw client", func() bool { return len(progressOf(raw, "completed")) == 1 })
	done := progressOf(raw, "completed")[0]
	waitContent(t, filepath.Join(rawDir, done["guid"].(string)), "raw same\n")
	if done["filePath"] != filepath.Join(rawDir, done["guid"].(string)) {
		t.Errorf("completed filePath = %v; want the client's own <downloadPath>/<guid>", done["filePath"])
	}

	clickIn(t, raw, rs, "dl")
	waitContent(t, filepath.Join(root, taskB, "report (1).csv"), "raw report.csv\n")
	clickIn(t, raw, rs, "pop")
	waitContent(t, filepath.Join(root, taskB, "popup.csv"), "raw popup.csv\n")
	if _, err := raw.Call("Runtime.evaluate", map[string]any{"userGesture": true,
		"expression": `document.getElementById("frame").contentDocument.getElementById("dl").click(), 1`}, rs); err != nil {
		t.Fatal(err)
	}
	waitContent(t, filepath.Join(root, taskB, "frame.csv"), "raw frame.csv\n")

	deny := dialRaw(t, m.storeWS("two-tasks", "aux"))
	deny.must("Browser.setDownloadBehavior", map[string]any{"behavior": "deny", "eventsEnabled": true}, "", nil)
	ds := openDownloadPage(t, deny, site.URL+"/?who=deny")
	clickIn(t, deny, ds, "dl")
	clickIn(t, raw, rs, "dl")
	testkit.WaitFor(t, 15*time.Second, "the denied download canceled", func() bool { return len(progressOf(deny, "canceled")) == 1 })
	waitContent(t, filepath.Join(root, taskB, "report (2).csv"), "raw report.csv\n")
	if files := testkit.Files(filepath.Join(root, "aux")); len(files) != 0 {
		t.Errorf("the client that denied downloads got %q", files)
	}
	for _, f := range testkit.Files(root) {
		if strings.HasPrefix(f, "unattributed") {
			t.Errorf("a download went unattributed: %s", f)
		}
	}
	var listed []api.Download
	testkit.WaitFor(t, 10*time.Second, "task B's downloads recorded", func() bool {
		listed = nil
		json.Unmarshal([]byte(m.cli("downloads", "--task", taskB, "--store", "two-tasks", "--json")), &listed)
		return len(listed) == 5
	})
	for _, d := range listed {
		if d.Task != taskB || d.Client != taskB {
			t.Errorf("task B's listing holds %+v", d)
		}
	}
	pup.send("close")
	pup.wait()
}

// TestDownloadRestartMidDownload: a manager and its browser killed in the middle of a download leave
// Chrome's partial file behind; the next manager's boot sweep removes it, and no file ever appears under a
// final name.
func TestDownloadRestartMidDownload(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	site := downloadSite(t)
	m.cli("store", "add", "Mid")
	if err := ensureStore(m, "mid"); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(m.home, "downloads", "mid")
	c := dialRaw(t, m.storeWS("mid", taskA))
	s := openDownloadPage(t, c, site.URL+"/?who=raw")
	clickIn(t, c, s, "slow")
	testkit.WaitFor(t, 15*time.Second, "the download's partial file", func() bool {
		files := testkit.Files(root)
		return len(files) == 1 && strings.HasPrefix(files[0], downloads.IncomingDir+string(filepath.Separator))
	})
	pid := m.browserOf("mid").PID
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.cmd.Wait()
	syscall.Kill(-pid, syscall.SIGKILL) // Chromium's own process group
	testkit.WaitFor(t, 10*time.Second, "Chromium gone", func() bool { return gone(pid) })
	if files := testkit.Files(root); len(files) != 1 {
		t.Fatalf("after the kill: %q; want the partial file still there (the sweep is what removes it)", files)
	}
	m.start()
	if files := testkit.Files(root); len(files) != 0 {
		t.Errorf("after the restart: %q; want the partial download swept and nothing under a final name", files)
	}
}
