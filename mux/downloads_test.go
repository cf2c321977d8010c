package mux

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/downloads"
)

// downloadsMux is a mux with a DownloadDir in front of fb, and what its Downloaded hook reported.
type downloadsMux struct {
	*Mux
	root string
	mu   sync.Mutex
	// mu guards done.
	done []downloads.Download
}

func startDownloadsMux(t *testing.T, fb *fakeBrowser) *downloadsMux {
	t.Helper()
	dm := &downloadsMux{root: t.TempDir()}
	dm.Mux = startMux(t, fb, Config{DownloadDir: dm.root, Hooks: Hooks{Downloaded: func(d downloads.Download) {
		dm.mu.Lock()
		dm.done = append(dm.done, d)
		dm.mu.Unlock()
	}}})
	return dm
}

func (dm *downloadsMux) downloads() []downloads.Download {
	dm.mu.Lock()
	defer dm.mu.Unlock()
	return append([]downloads.Download(nil), dm.done...)
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

// progress returns the client's downloadProgress events of guid in the given state.
func progress(c *testClient, guid, state string) []cdpMsg {
	var out []cdpMsg
	for _, e := range c.events("Browser.downloadProgress") {
		var p struct{ GUID, State string }
		json.Unmarshal(e.Params, &p)
		if p.GUID == guid && p.State == state {
			out = append(out, e)
		}
	}
	return out
}

func TestDownloadBehaviorIsTheMuxs(t *testing.T) {
	fb := newFakeBrowser(t)
	dm := startDownloadsMux(t, fb)
	incoming := filepath.Join(dm.root, downloads.IncomingDir)
	want := `{"behavior":"allowAndName","downloadPath":` + string(appendJSONString(nil, incoming)) + `,"eventsEnabled":true}`
	testkit.WaitFor(t, 5*time.Second, "the mux's own setDownloadBehavior", func() bool { return len(fb.downloadBehaviors()) == 1 })
	if got := fb.downloadBehaviors()[0]; got != want {
		t.Fatalf("setDownloadBehavior on connect = %s; want %s", got, want)
	}
	if fi, err := os.Stat(incoming); err != nil || !fi.IsDir() {
		t.Fatalf("incoming folder %s: %v", incoming, err)
	}
	a := newClient(t, dm.Mux, "a")
	tests := []struct{ name, params string }{
		{"deny", `{"behavior":"deny"}`},
		{"allow with a path", `{"behavior":"allow","downloadPath":"/tmp/elsewhere<>","eventsEnabled":true}`},
		{"default", `{"behavior":"default"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := a.call("Browser.setDownloadBehavior", tt.params, "")
			if r.Error != nil || string(r.Result) != "{}" {
				t.Fatalf("setDownloadBehavior(%s) = %s %v; want {}", tt.params, r.Result, r.Error)
			}
		})
	}
	for _, bad := range []string{`{"behavior":"sometimes"}`, `{"behavior":"allow","downloadPath":"relative/dir"}`} {
		if r := a.call("Browser.setDownloadBehavior", bad, ""); r.Error == nil || r.Error.Code != codeInvalidParam {
			t.Errorf("setDownloadBehavior(%s) = %s; want error %d", bad, r.Result, codeInvalidParam)
		}
	}
	page := a.createTarget("about:blank")
	sess := a.attach(page)
	if r := a.call("Page.setDownloadBehavior", `{"behavior":"deny"}`, sess); r.Error != nil || string(r.Result) != "{}" || r.SessionID != sess {
		t.Fatalf("Page.setDownloadBehavior = %s %v on session %q; want {} on %s", r.Result, r.Error, r.SessionID, sess)
	}
	if r := a.call("Browser.setDownloadBehavior", `{"behavior":"allow"}`, sess); r.Error != nil || string(r.Result) != "{}" || r.SessionID != sess {
		t.Fatalf("Browser.setDownloadBehavior on a session = %s %v on session %q; want {} on %s", r.Result, r.Error, r.SessionID, sess)
	}
	if n := len(fb.got("Browser.setDownloadBehavior")) + len(fb.got("Page.setDownloadBehavior")); n != 1 {
		t.Fatalf("browser got %d setDownloadBehavior; want only the mux's own", n)
	}
	ctx := result[struct {
		BrowserContextID string `json:"browserContextId"`
	}](t, a.call("Target.createBrowserContext", "", ""))
	testkit.WaitFor(t, 5*time.Second, "setDownloadBehavior for the client's new context", func() bool {
		return len(fb.downloadBehaviors()) == 2
	})
	if got := fb.downloadBehaviors()[1]; !strings.Contains(got, `"browserContextId":"`+ctx.BrowserContextID+`"`) || !strings.Contains(got, `"allowAndName"`) {
		t.Fatalf("setDownloadBehavior for a new context = %s", got)
	}
	fb.drop()
	testkit.WaitFor(t, 5*time.Second, "setDownloadBehavior again after a reconnect, the client's context too", func() bool {
		return len(fb.downloadBehaviors()) == 4
	})
	if got := fb.downloadBehaviors()[2]; got != want {
		t.Fatalf("setDownloadBehavior after a reconnect = %s; want %s", got, want)
	}
}

func TestDownloadFiledPerOwner(t *testing.T) { forEachTransport(t, testDownloadFiledPerOwner) }

func testDownloadFiledPerOwner(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	dm := startDownloadsMux(t, fb)
	const task1, task2 = "a1b2c3d4-0000-4000-8000-000000000001", "a1b2c3d4-0000-4000-8000-000000000002"
	t1 := newClient(t, dm.Mux, task1)
	t2 := newClient(t, dm.Mux, task2+"-w2") // a worker slot files into its task's folder
	quiet := newClient(t, dm.Mux, "aux")    // asked for no events
	for _, c := range []*testClient{t1, t2} {
		c.call("Browser.setDownloadBehavior", `{"behavior":"default","eventsEnabled":true}`, "")
	}
	p1, p2, p3 := t1.createTarget("about:blank"), t2.createTarget("about:blank"), quiet.createTarget("about:blank")
	testkit.WaitFor(t, 5*time.Second, "the mux's behavior in force", func() bool { return len(fb.downloadBehaviors()) == 1 })
	// Both at once: both partial before either completes.
	fb.beginDownload(p1, "g1", "report.csv")
	fb.beginDownload(p2, "g2", "report.csv")
	fb.beginDownload(p3, "g3", "../../etc/.passwd")
	fb.completeDownload("g2", "two")
	fb.completeDownload("g1", "one")
	fb.completeDownload("g3", "three")
	testkit.WaitFor(t, 5*time.Second, "three downloads filed", func() bool { return len(dm.downloads()) == 3 })
	fb.beginDownload(p1, "g4", "report.csv")
	fb.completeDownload("g4", "four")
	testkit.WaitFor(t, 5*time.Second, "the fourth filed", func() bool { return len(dm.downloads()) == 4 })

	want := map[string]string{
		filepath.Join(task1, "report.csv"):      "one",
		filepath.Join(task1, "report (1).csv"):  "four",
		filepath.Join(task2, "report.csv"):      "two",
		filepath.Join("aux", "_.._etc_.passwd"): "three",
	}
	files := testkit.Files(dm.root)
	if len(files) != len(want) {
		t.Fatalf("files under the downloads folder = %q; want %d files", files, len(want))
	}
	for rel, content := range want {
		if got := readFile(t, filepath.Join(dm.root, rel)); got != content {
			t.Errorf("%s holds %q; want %q", rel, got, content)
		}
	}
	for _, d := range dm.downloads() {
		sum := sha256.Sum256([]byte(readFile(t, d.Path)))
		if d.SHA256 != hex.EncodeToString(sum[:]) || d.Size != int64(len(readFile(t, d.Path))) || d.URL != "http://site.test/"+d.GUID {
			t.Errorf("Downloaded(%s) = %+v: wrong size, sha256 or URL", d.GUID, d)
		}
	}
	byGUID := map[string]downloads.Download{}
	for _, d := range dm.downloads() {
		byGUID[d.GUID] = d
	}
	if d := byGUID["g2"]; d.ClientID != task2+"-w2" || d.OwnerDir != task2 || d.Name != "report.csv" {
		t.Errorf("Downloaded(g2) = %+v; want client %s-w2 in folder %s", d, task2, task2)
	}
	if d := byGUID["g4"]; d.Name != "report (1).csv" {
		t.Errorf("Downloaded(g4).Name = %q; want %q", d.Name, "report (1).csv")
	}
	for _, c := range []struct {
		c    *testClient
		mine string
	}{{t1, "g1"}, {t2, "g2"}} {
		if len(c.c.events("Browser.downloadWillBegin")) == 0 || len(progress(c.c, c.mine, "completed")) != 1 {
			t.Errorf("the owner of %s did not hear it begin and complete", c.mine)
		}
		for _, e := range append(c.c.events("Browser.downloadWillBegin"), c.c.events("Browser.downloadProgress")...) {
			var p struct{ GUID string }
			json.Unmarshal(e.Params, &p)
			if p.GUID != c.mine && !(c.c == t1 && p.GUID == "g4") {
				t.Errorf("a client got an event of download %s, not its own", p.GUID)
			}
		}
	}
	quiet.call("Browser.getVersion", "", "")
	if n := len(quiet.events("Browser.downloadWillBegin")) + len(quiet.events("Browser.downloadProgress")); n != 0 {
		t.Errorf("a client that enabled no download events got %d", n)
	}
	var done struct{ FilePath string }
	json.Unmarshal(progress(t1, "g1", "completed")[0].Params, &done)
	if done.FilePath != filepath.Join(dm.root, task1, "report.csv") {
		t.Errorf("completed filePath = %q; want the file in the task's folder", done.FilePath)
	}
	if entries, _ := os.ReadDir(filepath.Join(dm.root, downloads.IncomingDir)); len(entries) != 0 {
		t.Errorf("incoming folder still holds %d files", len(entries))
	}
}

func TestDownloadClientsOwnPath(t *testing.T) {
	fb := newFakeBrowser(t)
	dm := startDownloadsMux(t, fb)
	pw, bh := newClient(t, dm.Mux, "pw"), newClient(t, dm.Mux, "bh")
	pwDir, bhDir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(bhDir, "report.csv"), []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	pw.call("Browser.setDownloadBehavior", `{"behavior":"allowAndName","downloadPath":"`+pwDir+`","eventsEnabled":true}`, "")
	bh.call("Browser.setDownloadBehavior", `{"behavior":"allow","downloadPath":"`+bhDir+`","eventsEnabled":true}`, "")
	p1, p2 := pw.createTarget("about:blank"), bh.createTarget("about:blank")
	testkit.WaitFor(t, 5*time.Second, "the mux's behavior in force", func() bool { return len(fb.downloadBehaviors()) == 1 })
	fb.beginDownload(p1, "gpw", "report.csv")
	fb.beginDownload(p2, "gbh", "report.csv")
	fb.completeDownload("gpw", "pw bytes")
	fb.completeDownload("gbh", "bh bytes")
	// The client's copy must exist when it hears "completed": check at the moment it arrives.
	for _, c := range []struct {
		c    *testClient
		guid string
		path string
		want string
	}{{pw, "gpw", filepath.Join(pwDir, "gpw"), "pw bytes"}, {bh, "gbh", filepath.Join(bhDir, "report (1).csv"), "bh bytes"}} {
		var got string
		testkit.WaitFor(t, 5*time.Second, "completed at "+c.guid+"'s owner", func() bool {
			if len(progress(c.c, c.guid, "completed")) == 0 {
				return false
			}
			b, _ := os.ReadFile(c.path)
			got = string(b)
			return true
		})
		if got != c.want {
			t.Errorf("%s at completion holds %q; want %q", c.path, got, c.want)
		}
		var done struct{ FilePath string }
		json.Unmarshal(progress(c.c, c.guid, "completed")[0].Params, &done)
		if done.FilePath != c.path {
			t.Errorf("completed filePath = %q; want %q", done.FilePath, c.path)
		}
	}
	if got := readFile(t, filepath.Join(bhDir, "report.csv")); got != "theirs" {
		t.Errorf("the client's own file was overwritten: %q", got)
	}
	if got := readFile(t, filepath.Join(dm.root, "pw", "report.csv")); got != "pw bytes" {
		t.Errorf("the owner folder's copy holds %q", got)
	}
}

func TestDownloadDenyAndCancel(t *testing.T) { forEachTransport(t, testDownloadDenyAndCancel) }

func testDownloadDenyAndCancel(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	dm := startDownloadsMux(t, fb)
	no, yes := newClient(t, dm.Mux, "no"), newClient(t, dm.Mux, "yes")
	no.call("Browser.setDownloadBehavior", `{"behavior":"deny","eventsEnabled":true}`, "")
	yes.call("Browser.setDownloadBehavior", `{"behavior":"allow","eventsEnabled":true}`, "")
	pn, py := no.createTarget("about:blank"), yes.createTarget("about:blank")
	testkit.WaitFor(t, 5*time.Second, "the mux's behavior in force", func() bool { return len(fb.downloadBehaviors()) == 1 })
	fb.beginDownload(pn, "gno", "a.txt")
	testkit.WaitFor(t, 5*time.Second, "the denied download canceled at its owner", func() bool { return len(progress(no, "gno", "canceled")) == 1 })
	if got := fb.got("Browser.cancelDownload"); len(got) != 1 || !strings.Contains(string(got[0].Params), `"gno"`) {
		t.Fatalf("browser got cancelDownload %v; want one for gno", got)
	}
	fb.beginDownload(py, "gyes", "a.txt")
	fb.beginDownload(py, "gcancel", "b.txt")
	fb.send(`{"method":"Browser.downloadProgress","params":{"guid":"gcancel","totalBytes":7,"receivedBytes":3,"state":"canceled"}}`)
	fb.completeDownload("gyes", "kept")
	testkit.WaitFor(t, 5*time.Second, "completed at the owner", func() bool { return len(progress(yes, "gyes", "completed")) == 1 })
	if p := string(progress(yes, "gyes", "completed")[0].Params); !strings.Contains(p, `"totalBytes":4,"receivedBytes":4,"state":"completed"`) {
		t.Errorf("completed as the owner sees it: %s", p)
	}
	testkit.WaitFor(t, 5*time.Second, "the allowed download filed", func() bool { return len(dm.downloads()) == 1 })
	testkit.WaitFor(t, 5*time.Second, "canceled at its owner", func() bool { return len(progress(yes, "gcancel", "canceled")) == 1 })
	if files := testkit.Files(dm.root); len(files) != 1 || files[0] != filepath.Join("yes", "a.txt") {
		t.Fatalf("files = %q; want only yes/a.txt (nothing of the denied or canceled ones)", files)
	}
	if len(fb.got("Browser.cancelDownload")) != 1 {
		t.Fatal("the allowed client's downloads were canceled too")
	}
	// Denied from a subframe, complete before its frame was found: still nothing for the denying client.
	fb.addFrame(pn, "DENYFRAME")
	fb.beginDownload("DENYFRAME", "gsubdeny", "d.txt")
	fb.completeDownload("gsubdeny", "denied")
	testkit.WaitFor(t, 10*time.Second, "the denied subframe download canceled at its owner", func() bool {
		return len(progress(no, "gsubdeny", "canceled")) == 1
	})
	if files := testkit.Files(dm.root); len(files) != 1 {
		t.Fatalf("files = %q; want only yes/a.txt", files)
	}
	fb.beginDownload(py, "gown", "c.txt")
	if r := no.call("Browser.cancelDownload", `{"guid":"gown"}`, ""); r.Error == nil {
		t.Fatal("a client canceled another client's download")
	}
	if r := yes.call("Browser.cancelDownload", `{"guid":"gown"}`, ""); r.Error != nil {
		t.Fatalf("the owner's cancelDownload = %v", r.Error)
	}
	testkit.WaitFor(t, 5*time.Second, "its own download canceled", func() bool { return len(progress(yes, "gown", "canceled")) == 1 })
	if n := len(fb.got("Browser.cancelDownload")); n != 3 {
		t.Fatalf("browser got %d cancelDownload; want 3 (two denied and the owner's own)", n)
	}
}

func TestDownloadAttribution(t *testing.T) {
	fb := newFakeBrowser(t)
	dm := startDownloadsMux(t, fb)
	a, b := newClient(t, dm.Mux, "a"), newClient(t, dm.Mux, "b")
	for _, c := range []*testClient{a, b} {
		c.call("Browser.setDownloadBehavior", `{"behavior":"default","eventsEnabled":true}`, "")
	}
	pa := a.createTarget("about:blank")
	pb := b.createTarget("about:blank")
	b.attach(pb) // b used its page last: the subframe search looks there first, and must go on to a's
	popup := fb.addPage("http://site.test/popup", pa)
	human := fb.addPage("http://site.test/mine", "")
	fb.addFrame(pa, "SUBFRAME")
	testkit.WaitFor(t, 5*time.Second, "the popup owned by its opener's owner", func() bool {
		return slices.Contains(a.targetIDs(), popup)
	})
	tests := []struct {
		name, frame, guid string
		owner             *testClient
		dir               string
	}{
		{"popup", popup, "gpopup", a, "a"},
		{"subframe", "SUBFRAME", "gsub", a, "a"},
		{"tab nobody created", human, "ghuman", nil, downloads.UnattributedDir},
		{"unknown frame", "NOSUCHFRAME", "gnone", nil, downloads.UnattributedDir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb.beginDownload(tt.frame, tt.guid, tt.guid+".txt")
			fb.completeDownload(tt.guid, tt.guid)
			p := filepath.Join(dm.root, tt.dir, tt.guid+".txt")
			testkit.WaitFor(t, 15*time.Second, tt.guid+" filed", func() bool { _, err := os.Stat(p); return err == nil })
			if tt.owner != nil {
				testkit.WaitFor(t, 5*time.Second, "completed at the owner", func() bool { return len(progress(tt.owner, tt.guid, "completed")) == 1 })
				if len(progress(tt.owner, tt.guid, "inProgress")) == 0 || len(tt.owner.events("Browser.downloadWillBegin")) == 0 {
					t.Errorf("the owner missed the events held while its frame was looked up")
				}
			}
		})
	}
	b.call("Browser.getVersion", "", "")
	if n := len(b.events("Browser.downloadWillBegin")) + len(b.events("Browser.downloadProgress")); n != 0 {
		t.Errorf("b got %d events of downloads it did not start", n)
	}
	for _, ev := range b.events("Target.attachedToTarget") {
		if !strings.Contains(string(ev.Params), pb) {
			t.Errorf("b saw the mux's frame lookup: %s", ev.Params)
		}
	}
}

func TestDownloadWithoutDir(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	a.call("Browser.setDownloadBehavior", `{"behavior":"allow","downloadPath":"/tmp/x","eventsEnabled":true}`, "")
	if got := fb.downloadBehaviors(); len(got) != 1 || !strings.Contains(got[0], `"/tmp/x"`) {
		t.Fatalf("without a DownloadDir the client's setDownloadBehavior reaches the browser as sent; got %q", got)
	}
	pa := a.createTarget("about:blank")
	fb.send(`{"method":"Browser.downloadWillBegin","params":{"frameId":"` + pa + `","guid":"g","url":"http://x/f","suggestedFilename":"f"}}`)
	fb.send(`{"method":"Browser.downloadProgress","params":{"guid":"g","totalBytes":1,"receivedBytes":1,"state":"completed","filePath":"/tmp/x/f"}}`)
	testkit.WaitFor(t, 5*time.Second, "events at the owner", func() bool { return len(progress(a, "g", "completed")) == 1 })
}

func TestCompletedEvent(t *testing.T) {
	var ev dlEvent
	ev.Params.GUID, ev.Params.TotalBytes, ev.Params.ReceivedBytes = "g<1>", 123456789012, 123456789012
	got := string(completedEvent(ev, "/d/r<1>.csv"))
	var back struct {
		Method string
		Params struct {
			GUID                      string
			TotalBytes, ReceivedBytes json.Number
			State, FilePath           string
		}
	}
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatalf("completedEvent = %s: %v", got, err)
	}
	p := back.Params
	if back.Method != "Browser.downloadProgress" || p.GUID != "g<1>" || p.TotalBytes != "123456789012" ||
		p.ReceivedBytes != "123456789012" || p.State != "completed" || p.FilePath != "/d/r<1>.csv" {
		t.Errorf("completedEvent = %s; want Chrome's shape with integer byte counts", got)
	}
}

// A download that would take its owner's downloads past the owner's room (the manager's per-task quota,
// Hooks.DownloadRoom) is cancelled, in progress or at completion: nothing of it is filed, its owner hears
// "canceled" and Hooks.DownloadCut is told; another owner's downloads, with room or none, go on.
func TestDownloadPastItsOwnersRoom(t *testing.T) {
	fb := newFakeBrowser(t)
	root := t.TempDir()
	room := map[string]int64{"small": 10, "tight": 8}
	var mu sync.Mutex
	var filed, cut []string
	m := startMux(t, fb, Config{DownloadDir: root, Hooks: Hooks{
		DownloadRoom: func(dir string) int64 {
			if n, ok := room[dir]; ok {
				return n
			}
			return -1
		},
		Downloaded: func(d downloads.Download) { mu.Lock(); filed = append(filed, d.GUID); mu.Unlock() },
		DownloadCut: func(d downloads.Download) {
			mu.Lock()
			cut = append(cut, fmt.Sprintf("%s %s %d", d.GUID, d.OwnerDir, d.Size))
			mu.Unlock()
		},
	}})
	small, tight, free := newClient(t, m, "small"), newClient(t, m, "tight"), newClient(t, m, "free")
	for _, c := range []*testClient{small, tight, free} {
		c.call("Browser.setDownloadBehavior", `{"behavior":"default","eventsEnabled":true}`, "")
	}
	ps, pt, pf := small.createTarget("about:blank"), tight.createTarget("about:blank"), free.createTarget("about:blank")
	testkit.WaitFor(t, 5*time.Second, "the mux's behavior in force", func() bool { return len(fb.downloadBehaviors()) == 1 })
	fb.beginDownload(ps, "fits", "a.txt")    // 7 of 10
	fb.beginDownload(ps, "over", "b.txt")    // 14 of 10, both in progress: cancelled
	fb.beginDownload(pt, "late", "c.txt")    // 7 of 8 in progress, then 12 at completion
	fb.beginDownload(pf, "unbound", "d.txt") // no room given: no bound
	testkit.WaitFor(t, 5*time.Second, "the download past its room canceled at its owner", func() bool {
		return len(progress(small, "over", "canceled")) == 1
	})
	fb.completeDownload("fits", "1234567")
	fb.completeDownload("over", "never")
	fb.completeDownload("late", "123456789012")
	fb.completeDownload("unbound", strings.Repeat("x", 100))
	testkit.WaitFor(t, 5*time.Second, "the two within their room filed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(filed) == 2
	})
	testkit.WaitFor(t, 5*time.Second, "the late one canceled at its owner", func() bool { return len(progress(tight, "late", "canceled")) == 1 })
	mu.Lock()
	slices.Sort(filed)
	slices.Sort(cut)
	gotFiled, gotCut := slices.Clone(filed), slices.Clone(cut)
	mu.Unlock()
	if !slices.Equal(gotFiled, []string{"fits", "unbound"}) {
		t.Errorf("filed %v; want fits and unbound", gotFiled)
	}
	if want := []string{"late tight 12", "over small 7"}; !slices.Equal(gotCut, want) {
		t.Errorf("DownloadCut told %v; want %v", gotCut, want)
	}
	if files := testkit.Files(root); !slices.Equal(files, []string{filepath.Join("free", "d.txt"), filepath.Join("small", "a.txt")}) {
		t.Errorf("files %q; want only the two filed", files)
	}
	if got := fb.got("Browser.cancelDownload"); len(got) != 1 || !strings.Contains(string(got[0].Params), `"over"`) {
		t.Errorf("browser got cancelDownload %v; want one, for the download in progress past its room", got)
	}
}
