//go:build integration

package manager

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
	m, _ := fakeManager(t, map[string]string{"VIBE_CHROME": bin, "VIBE_HEADLESS": "1", "VIBE_BROWSER_IDLE_S": "1"})
	m.backends = newBackends(m.cfg, m.root) // the real Chromium this time
	sp := fakeStore(t, m, "Watched")
	in, err := m.ensure(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tab, err := in.mux.NewHumanTab(ctx, "about:blank")
	if err != nil {
		t.Fatal(err)
	}
	view, err := in.mux.View(ctx, tab, mux.ViewOptions{MaxFPS: 10, MaxWidth: 640})
	if err != nil {
		t.Fatal(err)
	}
	in.lastEnsure.Store(0) // only the viewer can keep it busy now
	testkit.WaitFor(t, 10*time.Second, "the idle time to pass", func() bool {
		return time.Duration(in.mux.Stats().IdleSeconds*float64(time.Second)) >= m.cfg.Idle
	})
	if reason := m.busyReason(in); reason != "a person is watching" {
		t.Fatalf("busyReason with a viewer and nothing else = %q; want a person is watching", reason)
	}
	m.sweepIdle(context.Background())
	if m.slot(sp.key).current() == nil {
		t.Fatal("the idle sweep stopped a browser a person is watching")
	}
	view.Close()
	testkit.WaitFor(t, 10*time.Second, "the browser to be idle once the viewer left", func() bool {
		return m.busyReason(in) == ""
	})
	m.sweepIdle(context.Background())
	if m.slot(sp.key).current() != nil {
		t.Error("the idle sweep kept a browser nobody watches, holds or uses")
	}
}
