//go:build integration

package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"vibebrowser/mux"
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
	chr := startChromium(t)
	m := startMuxOn(t, chr.HTTP, mux.Config{})
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
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join("node_modules", "puppeteer-core")); err != nil {
		t.Skip("integration/node_modules missing: run `go tool task deps:node`")
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
	muxWaitFor(t, "puppeteer's tabs closed", 10*time.Second, func() bool { return len(m.Ownership()["pp"]) == 0 })
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
