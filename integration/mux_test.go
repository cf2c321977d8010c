//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux"
	"vibebrowser/mux/downloads"
)

// muxSite serves the pages the mux tests navigate to.
func muxSite(t *testing.T) *httptest.Server {
	t.Helper()
	h := http.NewServeMux()
	h.HandleFunc("/set", func(w http.ResponseWriter, r *http.Request) {
		http.SetCookie(w, &http.Cookie{Name: "shared", Value: r.URL.Query().Get("v"), Path: "/"})
		fmt.Fprint(w, "<html><title>set</title>cookie set</html>")
	})
	h.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><title>page %s</title><body>hello</body></html>", r.URL.Path)
	})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// chromedpClient opens a chromedp browser context through the mux as client id, with its first tab.
func chromedpClient(t *testing.T, m *muxUnderTest, id string) context.Context {
	t.Helper()
	alloc, cancelAlloc := remote.NewAllocator(context.Background(), m.WSBase+"/client-"+id, remote.NoModifyURL)
	ctx, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("chromedp client %s: %v", id, err)
	}
	return ctx
}

func chromedpTargetID(ctx context.Context) string {
	return string(chromedp.FromContext(ctx).Target.TargetID)
}

func pageTargets(t *testing.T, ctx context.Context) []string {
	t.Helper()
	infos, err := chromedp.Targets(ctx)
	if err != nil {
		t.Fatalf("Targets: %v", err)
	}
	var ids []string
	for _, ti := range infos {
		if ti.Type == "page" {
			ids = append(ids, string(ti.TargetID))
		}
	}
	return ids
}

func TestMuxChromedpIsolation(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	site := muxSite(t)
	a := chromedpClient(t, m, "a")
	b := chromedpClient(t, m, "b")
	ta, tb := chromedpTargetID(a), chromedpTargetID(b)

	// A raw discovery client sees nothing of a or b.
	spy := dialRaw(t, m.WSBase+"/client-spy")
	spy.must("Target.setDiscoverTargets", map[string]any{"discover": true, "filter": []any{map[string]any{}}}, "", nil)

	if err := chromedp.Do(a, chromedp.Navigate(site.URL+"/set?v=from-a")); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(b, chromedp.Navigate(site.URL+"/b")); err != nil {
		t.Fatal(err)
	}
	cookie, err := chromedp.Run(b, chromedp.Evaluate[string](`document.cookie`))
	if err != nil {
		t.Fatal(err)
	}
	if cookie != "shared=from-a" {
		t.Fatalf("b's document.cookie = %q; want the cookie a set (one shared profile)", cookie)
	}

	pa, pb := pageTargets(t, a), pageTargets(t, b)
	if !slices.Equal(pa, []string{ta}) || !slices.Equal(pb, []string{tb}) {
		t.Fatalf("getTargets: a sees %v, b sees %v; want [%s] and [%s]", pa, pb, ta, tb)
	}

	flatten := true
	actions := map[string]func(ctx context.Context) error{
		"attach": func(ctx context.Context) error {
			_, err := chromedp.CallBrowser(ctx, target.AttachToTarget, target.AttachToTargetParams{TargetID: target.ID(tb), Flatten: &flatten})
			return err
		},
		"close": func(ctx context.Context) error {
			_, err := chromedp.CallBrowser(ctx, target.CloseTarget, target.CloseTargetParams{TargetID: target.ID(tb)})
			return err
		},
		"activate": func(ctx context.Context) error {
			_, err := chromedp.CallBrowser(ctx, target.ActivateTarget, target.ActivateTargetParams{TargetID: target.ID(tb)})
			return err
		},
	}
	for name, act := range actions {
		err := act(a)
		if err == nil || !strings.Contains(err.Error(), "Target owned by another client") {
			t.Fatalf("a %s b's tab: %v; want Target owned by another client", name, err)
		}
	}
	if title, err := chromedp.Run(b, chromedp.Title()); err != nil || title != "page /b" {
		t.Fatalf("b's tab after a's attempts: title %q err %v", title, err)
	}

	// Events only reach the owner: the spy saw no target event and no session traffic.
	if err := chromedp.Do(a, chromedp.Navigate(site.URL+"/again")); err != nil {
		t.Fatal(err)
	}
	spy.must("Browser.getVersion", nil, "", nil)
	if ev := spy.Events(""); len(ev) != 0 {
		t.Fatalf("spy client received %d events of other clients, first %s", len(ev), ev[0].Method)
	}
	if ids := spy.targetIDs(true); len(ids) != 0 {
		t.Fatalf("spy sees targets %v", ids)
	}
}

func TestMuxSessionOwnershipOnChromium(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	m.ProbesRefusals = true // Browser.crash, below
	a := dialRaw(t, m.WSBase+"/client-a")
	b := dialRaw(t, m.WSBase+"/client-b")
	_, sa := a.createPage("about:blank")
	if _, err := b.evaluate(sa, "1+1"); err == nil {
		t.Fatal("b evaluated on a's session")
	}
	v, err := a.evaluate(sa, `"<b>&"`)
	if err != nil || string(v) != `"<b>&"` {
		t.Fatalf("a's evaluate = %s, %v; want the bytes unescaped", v, err)
	}
	var ce *cdpError
	if _, err := b.Call("Browser.crash", nil, ""); !errors.As(err, &ce) || !strings.Contains(ce.Message, "refused") {
		t.Fatalf("Browser.crash through the mux: %v; want a refusal", err)
	}
	if _, err := a.evaluate(sa, "1"); err != nil {
		t.Fatalf("browser hurt by a refused call: %v", err)
	}
	_ = time.Second
}

// nodeScript is a running node client script of integration/js: JSON lines out, commands in.
type nodeScript struct {
	t     *testing.T
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan map[string]any
	done  chan error
}

func startNodeScript(t *testing.T, script string, args ...string) *nodeScript {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testkit.Missing(t, "node is not installed")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "puppeteer-core")); err != nil {
		testkit.Missing(t, "integration/node_modules missing: run `go tool task deps:node`")
	}
	cmd := exec.Command(node, append([]string{filepath.Join("js", script)}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", script, err)
	}
	s := &nodeScript{t: t, name: script, cmd: cmd, stdin: stdin, lines: make(chan map[string]any, 64), done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				s.lines <- m
			}
		}
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("%w: %s", err, lastLines(stderr.String(), 15))
		}
		s.done <- err
		close(s.lines)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	return s
}

// expect waits for the script's next line and checks its event name.
func (s *nodeScript) expect(event string) map[string]any {
	s.t.Helper()
	select {
	case m, ok := <-s.lines:
		if !ok {
			s.t.Fatalf("%s ended before %q: %v", s.name, event, <-s.done)
		}
		if m["event"] != event {
			s.t.Fatalf("%s: got %v; want event %q", s.name, m, event)
		}
		return m
	case <-time.After(60 * time.Second):
		s.t.Fatalf("%s: no %q line in 60s", s.name, event)
	}
	return nil
}

func (s *nodeScript) send(cmd string) {
	s.t.Helper()
	if _, err := io.WriteString(s.stdin, cmd+"\n"); err != nil {
		s.t.Fatalf("%s: send %q: %v", s.name, cmd, err)
	}
}

func (s *nodeScript) wait() {
	s.t.Helper()
	select {
	case err := <-s.done:
		s.done <- err
		if err != nil {
			s.t.Fatalf("%s: %v", s.name, err)
		}
	case <-time.After(60 * time.Second):
		s.t.Fatalf("%s did not exit", s.name)
	}
}

func strs(v any) []string {
	var out []string
	if a, ok := v.([]any); ok {
		for _, x := range a {
			s, _ := x.(string)
			out = append(out, s)
		}
	}
	return out
}

func TestMuxNodeClientsWithChromedp(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	site := muxSite(t)
	cd := chromedpClient(t, m, "cd")
	if err := chromedp.Do(cd, chromedp.Navigate(site.URL+"/chromedp")); err != nil {
		t.Fatal(err)
	}

	pp := startNodeScript(t, "mux_puppeteer.js", m.WSBase+"/client-pp", site.URL+"/p")
	pw := startNodeScript(t, "mux_playwright.js", m.HTTPBase, site.URL+"/w")
	ppReady := pp.expect("ready")
	pwReady := pw.expect("ready")

	// While playwright is connected with waitForDebuggerOnStart, chromedp's new tabs run unpaused.
	cd2, cancel := chromedp.NewContext(cd)
	defer cancel()
	start := time.Now()
	if err := chromedp.Do(cd2, chromedp.Navigate(site.URL+"/chromedp-2")); err != nil {
		t.Fatalf("chromedp new tab while playwright is attached: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("chromedp's new tab took %v: paused by another client?", d)
	}

	pp.send("report")
	pw.send("report")
	ppRep, pwRep := pp.expect("report"), pw.expect("report")
	for name, urls := range map[string][]string{
		"puppeteer pages": strs(ppRep["pages"]), "puppeteer targets": strs(ppRep["targets"]),
		"puppeteer ready": strs(ppReady["pages"]), "playwright pages": strs(pwRep["pages"]),
		"playwright ready": strs(pwReady["pages"]),
	} {
		want := "by=puppeteer"
		if strings.HasPrefix(name, "playwright") {
			want = "by=playwright"
		}
		if len(urls) == 0 {
			t.Fatalf("%s: none", name)
		}
		for _, u := range urls {
			if !strings.Contains(u, want) {
				t.Fatalf("%s include %q (all: %v); want only its own pages", name, u, urls)
			}
		}
	}
	if n := len(strs(ppRep["pages"])); n != 2 {
		t.Fatalf("puppeteer sees %d pages; want its 2", n)
	}
	infos, err := chromedp.Targets(cd)
	if err != nil {
		t.Fatal(err)
	}
	var cdPages []string
	for _, ti := range infos {
		if ti.Type == "page" {
			cdPages = append(cdPages, ti.URL)
		}
	}
	if len(cdPages) != 2 {
		t.Fatalf("chromedp sees pages %v; want its 2", cdPages)
	}

	// puppeteer's browser.close() closes its tabs only; the browser and everyone else live on.
	pp.send("close")
	pp.expect("closed")
	pp.wait()
	testkit.WaitFor(t, 10*time.Second, "puppeteer's tabs closed", func() bool { return len(m.Ownership()["pp"]) == 0 })
	if title, err := chromedp.Run(cd, chromedp.Title()); err != nil || title != "page /chromedp" {
		t.Fatalf("chromedp after puppeteer's browser.close(): %q %v", title, err)
	}
	pw.send("report")
	if got := strs(pw.expect("report")["pages"]); len(got) != 1 {
		t.Fatalf("playwright pages after puppeteer closed: %v", got)
	}
	pw.send("close")
	pw.expect("closed")
	pw.wait()
	if _, err := chromedp.Run(cd, chromedp.Title()); err != nil {
		t.Fatalf("chromedp after playwright left: %v", err)
	}
}

func TestMuxPopupOwnedByOpener(t *testing.T) {
	t.Parallel()
	chr := startChromium(t, "--disable-popup-blocking")
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	site := muxSite(t)
	a := dialRaw(t, m.WSBase+"/client-a")
	b := dialRaw(t, m.WSBase+"/client-b")
	b.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	a.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	ta, sa := a.createPage(site.URL + "/opener")
	if _, err := a.evaluate(sa, `window.open(location.origin + "/popup"), 1`); err != nil {
		t.Fatal(err)
	}
	var popup string
	testkit.WaitFor(t, 10*time.Second, "popup announced to its opener's client", func() bool {
		for _, e := range a.Events("Target.targetCreated") {
			var p struct {
				TargetInfo struct{ TargetID, OpenerID, Type string }
			}
			json.Unmarshal(e.Params, &p)
			if p.TargetInfo.OpenerID == ta && p.TargetInfo.Type == "page" {
				popup = p.TargetInfo.TargetID
				return true
			}
		}
		return false
	})
	if !slices.Contains(a.targetIDs(false), popup) {
		t.Fatal("popup missing from its opener's getTargets")
	}
	if ids := b.targetIDs(true); len(ids) != 0 || len(b.Events("")) != 0 {
		t.Fatalf("b sees %v and %d events", ids, len(b.Events("")))
	}
	if _, err := b.Call("Target.attachToTarget", map[string]any{"targetId": popup, "flatten": true}, ""); err == nil {
		t.Fatal("b attached to a's popup")
	}
	a.must("Target.attachToTarget", map[string]any{"targetId": popup, "flatten": true}, "", nil)

	// playwright's popup event needs the popup auto-attached to it, through the mux.
	pw := startNodeScript(t, "mux_playwright.js", m.HTTPBase, site.URL+"/w")
	pw.expect("ready")
	pw.send("popup")
	if u, _ := pw.expect("popup")["url"].(string); !strings.Contains(u, "popup=playwright") {
		t.Fatalf("playwright popup url %q", u)
	}
	pw.send("close")
	pw.expect("closed")
}

// playwright's own browser context through the mux: newContext().newPage() needs the page auto-attached
// to it paused, as Chrome does (before new pages came paused, playwright failed on "_page" of undefined).
func TestMuxPlaywrightOwnContext(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	site := muxSite(t)
	other := dialRaw(t, m.WSBase+"/client-other")
	other.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	pw := startNodeScript(t, "mux_playwright.js", m.HTTPBase, site.URL+"/w")
	pw.expect("ready")
	pw.send("context")
	if got := pw.expect("context"); got["title"] != "page /w" || got["pages"] != float64(1) {
		t.Fatalf("playwright in its own context: %v", got)
	}
	if n := len(other.Events("Target.targetCreated")); n != 0 {
		t.Fatalf("another client saw %d of playwright's targets", n)
	}
	pw.send("close")
	pw.expect("closed")
}

// A client that asks Chrome to pause new targets (playwright does) gets its popup paused, through the mux,
// as on Chrome: the popup's document is not even requested before the client resumes it. Without the
// pause a popup can load before its client is listening, and playwright's waitForLoadState never ends.
func TestMuxPopupWaitsForItsClient(t *testing.T) {
	t.Parallel()
	chr := startChromium(t, "--disable-popup-blocking")
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	var popupRequests atomic.Int32
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/popup" {
			popupRequests.Add(1)
		}
		fmt.Fprintf(w, "<html><title>%s</title></html>", r.URL.Path)
	}))
	t.Cleanup(site.Close)
	a := dialRaw(t, m.WSBase+"/client-a")
	a.must("Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}, "", nil)
	_, sa := a.createPage(site.URL + "/opener")
	if _, err := a.evaluate(sa, `setTimeout(() => window.open(location.origin + "/popup")), 1`); err != nil {
		t.Fatal(err)
	}
	type attached struct {
		SessionID          string
		WaitingForDebugger bool
		TargetInfo         struct{ OpenerID, Type string }
	}
	var att attached
	testkit.WaitFor(t, 10*time.Second, "the popup auto-attached to its opener's client", func() bool {
		for _, e := range a.Events("Target.attachedToTarget") {
			var ev attached
			json.Unmarshal(e.Params, &ev)
			if ev.TargetInfo.OpenerID != "" && ev.TargetInfo.Type == "page" {
				att = ev
				return true
			}
		}
		return false
	})
	if !att.WaitingForDebugger {
		t.Fatal("the popup reached its client running; want it paused (waitingForDebugger)")
	}
	time.Sleep(500 * time.Millisecond)
	if n := popupRequests.Load(); n != 0 {
		t.Fatalf("the popup's document was requested %d times before its client resumed it", n)
	}
	a.must("Runtime.runIfWaitingForDebugger", nil, att.SessionID, nil)
	testkit.WaitFor(t, 10*time.Second, "the resumed popup loads", func() bool { return popupRequests.Load() == 1 })
}

func TestMuxOOPIFChildSessions(t *testing.T) {
	t.Parallel()
	chr := startChromium(t, "--site-per-process")
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	frame := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><body>frame<script>setInterval(() => console.log("tick from frame"), 50)</script></body></html>`)
	}))
	t.Cleanup(frame.Close)
	framePort := frame.Listener.Addr().(*net.TCPAddr).Port
	top := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<html><body>top<iframe src="http://127.0.0.1:%d/"></iframe></body></html>`, framePort)
	}))
	t.Cleanup(top.Close)
	topURL := "http://localhost:" + strings.TrimPrefix(top.URL, "http://127.0.0.1:") + "/" // another site than 127.0.0.1

	a := dialRaw(t, m.WSBase+"/client-a")
	spy := dialRaw(t, m.WSBase+"/client-spy")
	spy.must("Target.setDiscoverTargets", map[string]any{"discover": true, "filter": []any{map[string]any{}}}, "", nil)
	_, sa := a.createPage("about:blank")
	a.must("Target.setAutoAttach", map[string]any{"autoAttach": true, "waitForDebuggerOnStart": true, "flatten": true}, sa, nil)
	a.must("Page.enable", nil, sa, nil)
	a.must("Page.navigate", map[string]any{"url": topURL}, sa, nil)
	var child string
	testkit.WaitFor(t, 15*time.Second, "OOPIF child session at the owner", func() bool {
		for _, e := range a.Events("Target.attachedToTarget") {
			var p struct {
				SessionID          string
				WaitingForDebugger bool
				TargetInfo         struct{ Type, URL string }
			}
			json.Unmarshal(e.Params, &p)
			if e.SessionID == sa && p.TargetInfo.Type == "iframe" {
				child = p.SessionID
				return true
			}
		}
		return false
	})
	a.must("Runtime.enable", nil, child, nil)
	a.must("Runtime.runIfWaitingForDebugger", nil, child, nil)
	testkit.WaitFor(t, 15*time.Second, "console events of the OOPIF at the owner", func() bool {
		for _, e := range a.Events("Runtime.consoleAPICalled") {
			if e.SessionID == child {
				return true
			}
		}
		return false
	})
	v, err := a.evaluate(child, "location.port")
	if err != nil || string(v) != fmt.Sprintf(`"%d"`, framePort) {
		t.Fatalf("evaluate in the OOPIF = %s, %v", v, err)
	}
	if _, err := spy.evaluate(child, "1"); err == nil {
		t.Fatal("another client used the OOPIF session")
	}
	if ev := spy.Events(""); len(ev) != 0 {
		t.Fatalf("spy got %d events (first %s)", len(ev), ev[0].Method)
	}
}

func TestMuxDownload(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	dir := t.TempDir()
	m := startMuxOn(t, chr.HTTP, mux.Config{DownloadDir: dir})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/file" {
			w.Header().Set("Content-Disposition", `attachment; filename="report.csv"`)
			w.Header().Set("Content-Type", "text/csv")
			fmt.Fprint(w, "a,b\n1,2\n")
			return
		}
		fmt.Fprint(w, `<html><body><a id="dl" href="/file">download</a></body></html>`)
	}))
	t.Cleanup(site.Close)
	a := dialRaw(t, m.WSBase+"/client-a")
	b := dialRaw(t, m.WSBase+"/client-b")
	elsewhere := t.TempDir()
	for _, c := range []*rawCDP{a, b} {
		c.must("Browser.setDownloadBehavior", map[string]any{"behavior": "allow", "downloadPath": elsewhere, "eventsEnabled": true}, "", nil)
	}
	b.createPage("about:blank")
	_, sa := a.createPage(site.URL + "/")
	testkit.WaitFor(t, 10*time.Second, "page loaded", func() bool {
		v, err := a.evaluate(sa, `document.readyState === "complete" && !!document.getElementById("dl")`)
		return err == nil && string(v) == "true"
	})
	if _, err := a.evaluate(sa, `document.getElementById("dl").click(), 1`); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "download completed at its owner", func() bool {
		for _, e := range a.Events("Browser.downloadProgress") {
			if strings.Contains(string(e.Params), `"completed"`) {
				return true
			}
		}
		return false
	})
	if len(a.Events("Browser.downloadWillBegin")) != 1 {
		t.Fatalf("owner got %d downloadWillBegin", len(a.Events("Browser.downloadWillBegin")))
	}
	b.must("Browser.getVersion", nil, "", nil)
	if n := len(b.Events("Browser.downloadWillBegin")) + len(b.Events("Browser.downloadProgress")); n != 0 {
		t.Fatalf("another client got %d download events", n)
	}
	// Filed in the owner's folder, and (the client asked for allow with a path) at <its path>/<name>.
	for _, p := range []string{filepath.Join(dir, "a", "report.csv"), filepath.Join(elsewhere, "report.csv")} {
		if got, err := os.ReadFile(p); err != nil || string(got) != "a,b\n1,2\n" {
			t.Fatalf("download at %s: %q, %v", p, got, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, downloads.IncomingDir)); len(entries) != 0 {
		t.Fatalf("the incoming folder keeps %d files", len(entries))
	}
}

func TestMuxTabCapLRU(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{TabCap: 2})
	c := dialRaw(t, m.WSBase+"/client-c")
	t1, s1 := c.createPage("about:blank")
	t2, _ := c.createPage("about:blank")
	if _, err := c.evaluate(s1, "1"); err != nil { // t1 is now more recently used than t2
		t.Fatal(err)
	}
	t3, _ := c.createPage("about:blank")
	direct := dialRaw(t, chr.WS)
	testkit.WaitFor(t, 10*time.Second, "least recently used tab closed in Chromium", func() bool {
		ids := direct.targetIDs(false)
		return !slices.Contains(ids, t2) && slices.Contains(ids, t1) && slices.Contains(ids, t3)
	})
	if ids := c.targetIDs(false); len(ids) != 2 {
		t.Fatalf("client owns %v after the cap", ids)
	}
}

func TestMuxKillBrowserAndRelaunch(t *testing.T) {
	t.Parallel()
	profile := t.TempDir()
	chr := startChromiumProfile(t, profile)
	site := muxSite(t)
	relaunched := make(chan *chromiumProc, 1)
	// Every browser the hook starts is killed once the mux has stopped (this cleanup is registered before
	// the mux's, so it runs after it): killed any earlier, the relaunched browser would only be relaunched
	// again by the still running mux, into the profile the test is removing.
	var launchedMu sync.Mutex
	var launched []*chromiumProc
	t.Cleanup(func() {
		launchedMu.Lock()
		defer launchedMu.Unlock()
		for _, c := range launched {
			c.Kill()
		}
	})
	m := startMuxOn(t, chr.HTTP, mux.Config{
		ReconnectMin: 50 * time.Millisecond, ReconnectMax: 100 * time.Millisecond, ReconnectTries: 2,
		Hooks: mux.Hooks{Relaunch: func(ctx context.Context) (string, error) {
			// What the manager's chrome backend does: restore the previous session, crash or not.
			if err := muxRestorePrefs(profile); err != nil {
				return "", err
			}
			c, err := launchChromium(chromiumBinary(t), profile, "--restore-last-session")
			if err != nil {
				return "", err
			}
			launchedMu.Lock()
			launched = append(launched, c)
			launchedMu.Unlock()
			select {
			case relaunched <- c:
			default: // only the first relaunch is the test's
			}
			return c.HTTP, nil
		}},
	})
	a := dialRaw(t, m.WSBase+"/client-a")
	b := dialRaw(t, m.WSBase+"/client-b")
	_, sa := a.createPage(site.URL + "/task-a")
	b.createPage(site.URL + "/task-b")
	testkit.WaitFor(t, 10*time.Second, "pages loaded", func() bool {
		v, err := a.evaluate(sa, "document.title")
		return err == nil && string(v) == `"page /task-a"`
	})

	waitSessionSaved(t, profile, "/task-a", "/task-b")

	pending := make(chan error, 1)
	go func() {
		_, err := a.evaluate(sa, "document.title = 'in flight'; new Promise(() => {})") // never answers on its own
		pending <- err
	}()
	// The mux's own requests count in Stats().Pending too, so ask Chromium whether the call has reached it.
	testkit.WaitFor(t, 10*time.Second, "call in flight in Chromium", func() bool {
		_, body := httpGet(t, chr.HTTP+"/json/list")
		var targets []chromiumTarget
		json.Unmarshal([]byte(body), &targets)
		return slices.ContainsFunc(targets, func(tg chromiumTarget) bool { return tg.Title == "in flight" })
	})
	chr.Kill()
	select {
	case err := <-pending:
		var ce *cdpError
		if !errors.As(err, &ce) || ce.Code != -32603 || ce.Message != "Browser disconnected" {
			t.Fatalf("pending call after kill -9: %v; want -32603 Browser disconnected", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("pending call not failed after kill -9")
	}
	var next *chromiumProc
	select {
	case next = <-relaunched:
	case <-time.After(30 * time.Second):
		t.Fatal("relaunch hook not called")
	}
	testkit.WaitFor(t, 20*time.Second, "mux on the relaunched browser", func() bool { return m.Stats().Upstream })

	// Both clients are still known, on their connections, and each keeps its own tabs.
	testkit.WaitFor(t, 20*time.Second, "restored tabs back with their owners", func() bool {
		o := m.Ownership()
		return len(o["a"]) >= 1 && len(o["b"]) >= 1
	})
	direct := dialRaw(t, next.WS)
	var all struct {
		TargetInfos []struct{ TargetID, Type, URL string }
	}
	direct.must("Target.getTargets", nil, "", &all)
	t.Logf("relaunched browser: %+v; ownership %v", all.TargetInfos, m.Ownership())
	for name, c := range map[string]*rawCDP{"a": a, "b": b} {
		ids := c.targetIDs(false)
		if len(ids) != 1 {
			t.Fatalf("%s owns %v after the relaunch; want its one tab", name, ids)
		}
		var at struct{ SessionID string }
		c.must("Target.attachToTarget", map[string]any{"targetId": ids[0], "flatten": true}, "", &at)
		// Chromium's session restore loads a background tab when it gets to it, and on a busy machine it gets
		// to it late: a client that uses its restored tab brings it to the front first, and so does this one.
		c.must("Page.bringToFront", nil, at.SessionID, nil)
		testkit.WaitFor(t, 15*time.Second, name+"'s restored tab shows its page", func() bool {
			v, err := c.evaluate(at.SessionID, `document.readyState === "complete" && location.pathname`)
			return err == nil && string(v) == `"/task-`+name+`"`
		})
	}
}

// muxRestorePrefs sets the profile to restore its last session and marks the last exit clean, so that a
// relaunch after kill -9 restores the tabs instead of offering to.
func muxRestorePrefs(profile string) error {
	path := filepath.Join(profile, "Default", "Preferences")
	prefs := map[string]any{}
	if b, err := os.ReadFile(path); err == nil {
		json.Unmarshal(b, &prefs)
	}
	sub := func(k string) map[string]any {
		m, _ := prefs[k].(map[string]any)
		if m == nil {
			m = map[string]any{}
			prefs[k] = m
		}
		return m
	}
	sub("session")["restore_on_startup"] = 1
	sub("profile")["exit_type"] = "Normal"
	sub("profile")["exited_cleanly"] = true
	b, err := json.Marshal(prefs)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// TestMuxBrowserUseAndAgentBrowserFlows replays the connect-time traffic of browser-use 0.13 and of
// agent-browser (SPEC §5) side by side through the mux.
func TestMuxBrowserUseAndAgentBrowserFlows(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{})
	site := muxSite(t)

	bu := dialRaw(t, m.WSBase+"/client-0123abcd-task")
	bu.targetIDs(false)
	bu.targetIDs(false)
	var ct struct{ TargetID string }
	bu.must("Target.createTarget", map[string]any{"url": "about:blank", "background": true}, "", &ct)
	var at struct{ SessionID string }
	bu.must("Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, "", &at)
	for _, d := range []string{"Page", "DOM", "Runtime", "Network"} {
		bu.must(d+".enable", nil, at.SessionID, nil)
	}
	bu.must("Page.navigate", map[string]any{"url": site.URL + "/bu"}, at.SessionID, nil)

	// agent-browser discovers through /json/version, then attaches to every page it is shown.
	resp, err := http.Get(m.HTTPBase + "/json/version")
	if err != nil {
		t.Fatal(err)
	}
	var version struct{ WebSocketDebuggerURL string }
	json.NewDecoder(resp.Body).Decode(&version)
	resp.Body.Close()
	ab := dialRaw(t, version.WebSocketDebuggerURL)
	ab.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	if ids := ab.targetIDs(true); len(ids) != 0 {
		t.Fatalf("agent-browser is shown %v before creating anything", ids)
	}
	own, _ := ab.createPage(site.URL + "/ab")
	for _, id := range ab.targetIDs(false) {
		if id != own {
			t.Fatalf("agent-browser is shown %s, not its own", id)
		}
		ab.must("Target.attachToTarget", map[string]any{"targetId": id, "flatten": true}, "", nil)
	}
	if ids := bu.targetIDs(false); len(ids) != 1 || ids[0] != ct.TargetID {
		t.Fatalf("browser-use sees %v; want only %s", ids, ct.TargetID)
	}
	testkit.WaitFor(t, 10*time.Second, "browser-use page loaded", func() bool {
		v, err := bu.evaluate(at.SessionID, `document.readyState === "complete" && document.title`)
		return err == nil && string(v) == `"page /bu"`
	})
}

// TestMuxClientKilled kills -9 a real puppeteer process mid-session: the other client never notices, the
// victim's client id gets its tabs back when it reconnects within the grace period, and once the grace
// runs out with nobody back its tabs are closed in the browser.
func TestMuxClientKilled(t *testing.T) {
	t.Parallel()
	chr := startChromium(t)
	// The grace is long enough for a node process to start and reconnect on a loaded machine.
	m := startMuxOn(t, chr.HTTP, mux.Config{Grace: 12 * time.Second})
	site := muxSite(t)
	cd := chromedpClient(t, m, "steady")
	if err := chromedp.Do(cd, chromedp.Navigate(site.URL+"/steady")); err != nil {
		t.Fatal(err)
	}
	direct := dialRaw(t, chr.WS)
	browserPages := func(marker string) int {
		var all struct{ TargetInfos []struct{ Type, URL string } }
		direct.must("Target.getTargets", nil, "", &all)
		n := 0
		for _, ti := range all.TargetInfos {
			if ti.Type == "page" && strings.Contains(ti.URL, marker) {
				n++
			}
		}
		return n
	}
	steadyWorks := func(when string) {
		t.Helper()
		title, err := chromedp.Run(cd, chromedp.Title())
		if err != nil || title != "page /steady" {
			t.Fatalf("%s: the other client's page answered %q, %v", when, title, err)
		}
	}

	victim := startNodeScript(t, "mux_puppeteer.js", m.WSBase+"/client-victim", site.URL+"/v")
	victim.expect("ready")
	victim.cmd.Process.Kill()
	steadyWorks("right after the kill")
	testkit.WaitFor(t, 10*time.Second, "the kill noticed", func() bool { return m.Stats().Clients == 1 })
	if n := browserPages("by=puppeteer"); n != 2 {
		t.Fatalf("during the grace period the browser has %d of the victim's pages; want its 2", n)
	}

	// Back within the grace period under the same client id: the old pages are its own again.
	again := startNodeScript(t, "mux_puppeteer.js", m.WSBase+"/client-victim", site.URL+"/v")
	if pages := strs(again.expect("ready")["pages"]); len(pages) != 4 {
		t.Fatalf("the reconnected victim sees %v; want its 2 old pages and 2 new ones", pages)
	}
	again.cmd.Process.Kill()
	steadyWorks("after the second kill")

	// Nobody comes back: after the grace period the victim's tabs are closed, the other client's stay.
	testkit.WaitFor(t, 40*time.Second, "the victim's tabs closed after the grace period", func() bool {
		return browserPages("by=puppeteer") == 0
	})
	steadyWorks("after the grace period")
	if n := browserPages("/steady"); n != 1 {
		t.Errorf("the other client's page count is %d; want 1", n)
	}
}
