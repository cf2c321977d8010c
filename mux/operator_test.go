package mux

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

// viewSession returns the CDP session of a view's operator session.
func viewSession(m *Mux, v *View) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return v.sess.id
}

// targetUse is what a client can observe (or the mux counts) of its tabs' use: LRU ticks and times.
func targetUse(m *Mux, ids ...string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, id := range ids {
		if t := m.targets[id]; t != nil {
			fmt.Fprintf(&b, "%s:%d@%s ", id, t.used, t.usedAt.Format(time.RFC3339Nano))
		}
	}
	return b.String()
}

// testCtx bounds a test's operator calls, so a broken rule fails the test instead of hanging it.
func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func clientActive(m *Mux, id string) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.clients[id].active
}

func TestOperatorInvisible(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{TabCap: 2})
	ctx := testCtx(t)

	watcher := newClient(t, m, "watcher") // discovery and auto-attach on: would see any event
	result[struct{}](t, watcher.call("Target.setDiscoverTargets", `{"discover":true,"filter":[{}]}`, ""))
	result[struct{}](t, watcher.call("Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true,"filter":[{}]}`, ""))
	p1 := watcher.createTarget("https://one.example/")
	p2 := watcher.createTarget("https://two.example/")
	s1 := watcher.attach(p1)
	watcher.call("Runtime.evaluate", `{"expression":"1"}`, s1) // p1 most recently used
	lister := newClient(t, m, "lister")
	own := lister.createTarget("https://own.example/")
	wantWatcher, wantLister := watcher.targetIDs(), lister.targetIDs()

	before := m.Stats()
	use := targetUse(m, p1, p2, own)
	active := clientActive(m, "watcher")
	seen := len(watcher.all())
	quiet := func(what string) {
		t.Helper()
		testkit.WaitFor(t, 5*time.Second, what, func() bool {
			m.mu.Lock()
			defer m.mu.Unlock()
			return len(m.pending) == 0
		})
	}

	// Watching one of the watcher's tabs (a live view, a frame, input) and a thumbnail of the other.
	v, err := m.View(ctx, p1, ViewOptions{MaxWidth: 640})
	if err != nil {
		t.Fatalf("View(%s): %v", p1, err)
	}
	if _, err := v.Next(ctx); err != nil {
		t.Fatalf("Next: %v", err)
	}
	if err := v.Mouse(ctx, MouseEvent{Type: "mouseMoved", X: 1, Y: 2}); err != nil {
		t.Fatalf("Mouse: %v", err)
	}
	if _, err := m.Thumbnail(ctx, p2, 200, 50); err != nil {
		t.Fatalf("Thumbnail(%s): %v", p2, err)
	}
	quiet("operator calls answered")
	s := m.Stats()
	if s.Viewers != 1 || s.Clients != before.Clients {
		t.Errorf("Stats while watching: Viewers %d, Clients %d; want 1, %d", s.Viewers, s.Clients, before.Clients)
	}
	if !s.LastActivity.Equal(before.LastActivity) || s.IdleSeconds < before.IdleSeconds {
		t.Errorf("Stats while watching: LastActivity %v, IdleSeconds %v; want %v, at least %v (watching is not activity)",
			s.LastActivity, s.IdleSeconds, before.LastActivity, before.IdleSeconds)
	}
	if got := clientActive(m, "watcher"); !got.Equal(active) {
		t.Errorf("watcher's last activity = %v while watched; want %v", got, active)
	}
	if got := targetUse(m, p1, p2, own); got != use {
		t.Errorf("tab use while watched = %s; want %s (LRU untouched)", got, use)
	}
	for i, cs := range s.PerClient {
		if b := before.PerClient[i]; cs.ID != b.ID || cs.Tabs != b.Tabs || !cs.LastActivity.Equal(b.LastActivity) {
			t.Errorf("PerClient[%d] = %+v while watching; want %+v", i, cs, b)
		}
	}

	// A human tab: created, watched, used, closed, while the clients look.
	h, err := m.NewHumanTab(ctx, "https://login.example/")
	if err != nil {
		t.Fatalf("NewHumanTab: %v", err)
	}
	hv, err := m.View(ctx, h, ViewOptions{})
	if err != nil {
		t.Fatalf("View(human tab): %v", err)
	}
	if err := hv.Navigate(ctx, "https://login.example/form"); err != nil {
		t.Fatalf("Navigate: %v", err)
	}
	if err := hv.InsertText(ctx, "secret"); err != nil {
		t.Fatalf("InsertText: %v", err)
	}
	if got := watcher.targetIDs(); !slices.Equal(got, wantWatcher) {
		t.Errorf("watcher getTargets with a human tab open = %v; want %v", got, wantWatcher)
	}
	if got := lister.targetIDs(); !slices.Equal(got, wantLister) {
		t.Errorf("lister getTargets with a human tab open = %v; want %v", got, wantLister)
	}
	seen++ // the watcher's getTargets answer
	hv.Close()
	v.Close()
	if err := m.CloseHumanTab(h); err != nil {
		t.Fatalf("CloseHumanTab: %v", err)
	}
	testkit.WaitFor(t, 5*time.Second, "human tab closed, operator sessions gone", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return !fb.hasTarget(h) && len(m.op.sessions) == 0 && len(m.pending) == 0 && fb.casts() == 0
	})
	if got := targetUse(m, p1, p2, own); got != use {
		t.Errorf("tab use after watching = %s; want %s (LRU untouched)", got, use)
	}

	// A round trip through the watcher flushes anything the mux might still have queued for it.
	watcher.call("Browser.getVersion", "", "")
	for _, raw := range watcher.all()[seen:] {
		if !strings.Contains(string(raw), `"product"`) {
			t.Errorf("watcher got %s while an operator watched its tab and a human tab came and went", raw)
		}
	}
	if got := watcher.targetIDs(); !slices.Equal(got, wantWatcher) {
		t.Errorf("watcher getTargets = %v; want %v", got, wantWatcher)
	}
	if got := lister.targetIDs(); !slices.Equal(got, wantLister) {
		t.Errorf("lister getTargets = %v; want %v", got, wantLister)
	}
	if after := m.Stats(); after.Clients != before.Clients || after.Viewers != 0 {
		t.Errorf("Stats after: Clients %d, Viewers %d; want %d, 0", after.Clients, after.Viewers, before.Clients)
	}
}
