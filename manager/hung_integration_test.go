//go:build integration

package manager_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager"
	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
)

// TestHungBrowserIsRelaunchedBehindItsMux stops (SIGSTOP) a running Chromium: its mux finds it silent,
// drops the connection, fails to reconnect and calls the manager's relaunch hook, which kills the hung
// process group and launches a fresh Chromium on the profile behind the same mux port. The task's tab
// comes back to it. The mux's timing is shortened (manager.SetMuxTiming, test-only) so this takes seconds
// instead of minutes.
func TestHungBrowserIsRelaunchedBehindItsMux(t *testing.T) {
	bin, err := chrome.Find("")
	if err != nil {
		t.Fatalf("the integration tests need Chromium (go tool task deps): %v", err)
	}
	cfg := daemonConfig(t, map[string]string{"VIBE_CHROME": bin, "VIBE_HEADLESS": "1", "VIBE_BROWSER_IDLE_S": "0"}, true)
	// A pong timeout of 2 s: over the pipe the mux's dial also waits that long for the browser's
	// Browser.getVersion, which a Chromium still starting its first renderers on a busy machine can take more
	// than half a second to answer; with one try, a shorter wait took the fresh browser for a hung one.
	manager.SetMuxTiming(cfg, 200*time.Millisecond, 2*time.Second, 100*time.Millisecond, 200*time.Millisecond, 1)
	d := runDaemon(t, cfg)
	ctx, client := context.Background(), d.client

	store, err := client.CreateStore(ctx, api.StoreSpec{Name: "hung"})
	if err != nil {
		t.Fatal(err)
	}
	ens, err := client.EnsureSession(ctx, api.EnsureRequest{Kind: api.KindStore, StoreID: store.ID,
		ClientID: "hung-task", BUName: "hung-task"})
	if err != nil {
		t.Fatal(err)
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<html><title>page %s</title></html>", r.URL.Path)
	}))
	defer site.Close()
	alloc, cancelAlloc := remote.NewAllocator(ctx, ens.CDPWS, remote.NoModifyURL)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(alloc)
	defer cancelTab()
	if err := chromedp.Do(tab, chromedp.Navigate(site.URL+"/hung-page")); err != nil {
		t.Fatal(err)
	}
	// Chromium writes its session (what the relaunch restores) on a timer: wait for it.
	testkit.WaitFor(t, 30*time.Second, "the session saved to the profile", func() bool {
		files, _ := filepath.Glob(filepath.Join(d.home, "profiles", store.Slug, "Default", "Sessions", "Session_*"))
		for _, f := range files {
			if b, _ := os.ReadFile(f); strings.Contains(string(b), "/hung-page") {
				return true
			}
		}
		return false
	})

	before := browserOf(t, client, store.Slug)
	if err := syscall.Kill(before.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(before.PID, syscall.SIGCONT) })
	testkit.WaitFor(t, 60*time.Second, "the hung browser replaced", func() bool {
		b := browserOf(t, client, store.Slug)
		return b.Status == api.StatusRunning && b.PID != before.PID && b.PID != 0
	})
	if after := browserOf(t, client, store.Slug); after.ProxyPort != before.ProxyPort {
		t.Errorf("relaunched behind port %d; want the same mux port %d", after.ProxyPort, before.ProxyPort)
	}
	testkit.WaitFor(t, 10*time.Second, "the hung process killed", func() bool {
		return syscall.Kill(before.PID, 0) == syscall.ESRCH
	})

	// The task's client id sees its restored tab, and only that.
	again, cancelAgain := remote.NewAllocator(ctx, ens.CDPWS, remote.NoModifyURL)
	defer cancelAgain()
	probe, cancelProbe := chromedp.NewContext(again)
	defer cancelProbe()
	testkit.WaitFor(t, 20*time.Second, "the task's tab back with it", func() bool {
		infos, err := chromedp.Targets(probe)
		if err != nil {
			return false
		}
		var pages []string
		for _, ti := range infos {
			if ti.Type == "page" {
				pages = append(pages, ti.URL)
			}
		}
		return len(pages) == 1 && strings.HasSuffix(pages[0], "/hung-page")
	})
}

// browserOf returns the status line of the browser with this slug.
func browserOf(t *testing.T, client *api.Client, slug string) api.Browser {
	t.Helper()
	st, err := client.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range st.Browsers {
		if b.Slug == slug {
			return b
		}
	}
	t.Fatalf("no browser %s in the status", slug)
	return api.Browser{}
}
