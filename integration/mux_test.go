//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
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
