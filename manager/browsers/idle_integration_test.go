//go:build integration

package browsers

import (
	"context"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/chrome"
	"vibebrowser/mux"
)

// TestAWatchedBrowserIsNotIdle: a person watching a tab (here a human tab, the way a store is logged in on a
// headless machine) keeps the browser from the idle stop, though no task holds it and no client is connected;
// once the viewer leaves, it is idle again.
func TestAWatchedBrowserIsNotIdle(t *testing.T) {
	bin, err := chrome.Find("")
	if err != nil {
		t.Fatalf("the integration tests need Chromium (go tool task deps): %v", err)
	}
	headless := true
	f, _ := fakeFleet(t, func(c *Config) { c.Chrome, c.Headless, c.Idle = bin, &headless, time.Second })
	f.backends = newBackends(&f.cfg, f.db, f.root) // the real Chromium this time
	sp := fakeStore(t, f, "Watched")
	in, err := f.Ensure(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tab, err := in.Mux().Operator().NewHumanTab(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	view, err := in.Mux().Operator().View(ctx, tab, mux.ViewOptions{MaxFPS: 10, MaxWidth: 640})
	if err != nil {
		t.Fatal(err)
	}
	in.lastEnsure.Store(0) // only the viewer can keep it busy now
	testkit.WaitFor(t, 10*time.Second, "the idle time to pass", func() bool {
		return time.Duration(in.Mux().Stats().IdleSeconds*float64(time.Second)) >= f.cfg.Idle
	})
	if reason := f.busyReason(in); reason != "a person is watching" {
		t.Fatalf("busyReason with a viewer and nothing else = %q; want a person is watching", reason)
	}
	f.StopIdle(context.Background(), nil)
	if f.Current(sp.Key) == nil {
		t.Fatal("the idle sweep stopped a browser a person is watching")
	}
	view.Close()
	testkit.WaitFor(t, 10*time.Second, "the browser to be idle once the viewer left", func() bool {
		return f.busyReason(in) == ""
	})
	f.StopIdle(context.Background(), nil)
	if f.Current(sp.Key) != nil {
		t.Error("the idle sweep kept a browser nobody watches, holds or uses")
	}
}
