package mux

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

func TestCreateClaimsOnlyItsTargets(t *testing.T) {
	forEachTransport(t, testCreateClaimsOnlyItsTargets)
}

func testCreateClaimsOnlyItsTargets(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	c.call("Target.setDiscoverTargets", `{"discover":true,"filter":[{}]}`, "")
	c.call("Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true,"filter":[{}]}`, "")
	fb.mu.Lock()
	fb.extra = 1 // the startup tab of a just-launched browser shows up while the create is pending
	fb.mu.Unlock()
	page := c.createTarget("https://mine.example/")
	ids := c.targetIDs()
	for _, method := range []string{"Target.targetCreated", "Target.attachedToTarget"} {
		evs := c.events(method)
		if len(evs) != 2 {
			t.Fatalf("%d %s events; want 2 (its tab and page)", len(evs), method)
		}
		for _, e := range evs {
			var p struct{ TargetInfo struct{ TargetID string } }
			json.Unmarshal(e.Params, &p)
			if !slices.Contains(ids, p.TargetInfo.TargetID) {
				t.Fatalf("%s for %s, which the create did not make", method, p.TargetInfo.TargetID)
			}
		}
	}
	if len(ids) != 2 || !slices.Contains(ids, page) {
		t.Fatalf("client owns %v; want only its page %s and that page's tab", ids, page)
	}
	fb.mu.Lock()
	tab := fb.targets[page].Tab
	fb.mu.Unlock()
	if !slices.Contains(ids, tab) {
		t.Fatalf("client owns %v; want its tab %s", ids, tab)
	}
}

func TestPuppeteerTabTargets(t *testing.T) { forEachTransport(t, testPuppeteerTabTargets) }

func testPuppeteerTabTargets(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	// puppeteer: discovery of everything, browser-level auto-attach to non-page targets (tabs).
	pp := newClient(t, m, "pp")
	other := newClient(t, m, "other")
	pp.call("Target.setDiscoverTargets", `{"discover":true,"filter":[{}]}`, "")
	pp.call("Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true,"filter":[{"type":"page","exclude":true},{}]}`, "")
	var wg sync.WaitGroup
	ids := make([]string, 4)
	for i := range ids {
		wg.Add(1)
		c := pp
		if i%2 == 1 {
			c = other
		}
		go func() { defer wg.Done(); ids[i] = c.createTarget("about:blank") }()
	}
	wg.Wait()
	var tabs []string
	for _, e := range pp.events("Target.attachedToTarget") {
		var p struct {
			TargetInfo struct{ TargetID, Type string } `json:"targetInfo"`
		}
		json.Unmarshal(e.Params, &p)
		if p.TargetInfo.Type != "tab" {
			t.Fatalf("pp auto-attached to a %s; its filter excludes pages", p.TargetInfo.Type)
		}
		tabs = append(tabs, p.TargetInfo.TargetID)
	}
	if len(tabs) != 2 {
		t.Fatalf("pp auto-attached to %d tabs; want its 2", len(tabs))
	}
	own := pp.targetIDs()
	for _, tab := range tabs {
		if !slices.Contains(own, tab) {
			t.Fatalf("tab %s not owned by pp", tab)
		}
	}
	for _, id := range []string{ids[1], ids[3]} {
		if slices.Contains(own, id) {
			t.Fatal("pp owns other's page")
		}
	}
}

func TestTabCapLRU(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{TabCap: 2})
	c := newClient(t, m, "c")
	t1 := c.createTarget("about:blank")
	t2 := c.createTarget("about:blank")
	s1 := c.attach(t1)
	c.call("Runtime.evaluate", `{"expression":"1"}`, s1) // t1 is now more recent than t2
	t3 := c.createTarget("about:blank")
	testkit.WaitFor(t, 5*time.Second, "LRU tab closed", func() bool { return !fb.hasTarget(t2) })
	if !fb.hasTarget(t1) || !fb.hasTarget(t3) {
		t.Fatalf("tab cap closed the wrong tab: t1 %v t3 %v", fb.hasTarget(t1), fb.hasTarget(t3))
	}
	testkit.WaitFor(t, 5*time.Second, "two tabs counted", func() bool { return m.Stats().PerClient[0].Tabs == 2 })
}

// TestTabCapDefaultAndOff checks that a zero TabCap is the default cap, not "no cap", and that Off is.
func TestTabCapDefaultAndOff(t *testing.T) {
	tests := []struct {
		name     string
		tabCap   int
		wantTabs int
	}{
		{name: "zero is the default", tabCap: 0, wantTabs: DefaultTabCap},
		{name: "off", tabCap: Off, wantTabs: DefaultTabCap + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := newFakeBrowser(t)
			m := startMux(t, fb, Config{TabCap: tt.tabCap})
			c := newClient(t, m, "c")
			var ids []string
			for range DefaultTabCap + 1 {
				ids = append(ids, c.createTarget("about:blank"))
			}
			c.call("Browser.getVersion", "", "") // a cap's closeTarget went upstream before this
			if got := m.Stats().PerClient[0].Tabs; got != tt.wantTabs {
				t.Fatalf("TabCap %d: %d tabs after %d creates; want %d", tt.tabCap, got, len(ids), tt.wantTabs)
			}
			if got := fb.hasTarget(ids[0]); got != (tt.wantTabs > DefaultTabCap) {
				t.Fatalf("TabCap %d: oldest tab open = %v after %d creates", tt.tabCap, got, len(ids))
			}
		})
	}
}

func TestGrace(t *testing.T) {
	t.Run("recovery", func(t *testing.T) {
		fb := newFakeBrowser(t)
		m := startMux(t, fb, Config{Grace: time.Minute})
		c := newClient(t, m, "g")
		tid := c.createTarget("about:blank")
		sid := c.attach(tid)
		c.ws.Close()
		testkit.WaitFor(t, 5*time.Second, "disconnect seen", func() bool { return m.Stats().Clients == 0 })
		c2 := newClient(t, m, "g")
		if !slices.Contains(c2.targetIDs(), tid) {
			t.Fatal("tab not recovered within the grace period")
		}
		if r := c2.call("Runtime.evaluate", `{"expression":"1"}`, sid); r.Error == nil {
			t.Fatal("old session still usable after reconnect; want it dropped")
		}
		if !slices.Contains(c2.targetIDs(), tid) {
			t.Fatal("tab lost")
		}
	})
	t.Run("expiry", func(t *testing.T) {
		fb := newFakeBrowser(t)
		var mu sync.Mutex
		var last map[string][]string
		m := startMux(t, fb, Config{Grace: 50 * time.Millisecond, Hooks: Hooks{OwnershipChanged: func(o map[string][]string) {
			mu.Lock()
			last = o
			mu.Unlock()
		}}})
		c := newClient(t, m, "g")
		tid := c.createTarget("about:blank")
		testkit.WaitFor(t, 5*time.Second, "ownership persisted", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return slices.Contains(last["g"], tid)
		})
		c.ws.Close()
		testkit.WaitFor(t, 5*time.Second, "tab closed after the grace period", func() bool { return !fb.hasTarget(tid) })
		testkit.WaitFor(t, 5*time.Second, "client forgotten", func() bool { return len(m.Stats().PerClient) == 0 })
		testkit.WaitFor(t, 5*time.Second, "ownership persisted empty", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(last["g"]) == 0
		})
	})
}

// TestOwnershipHookSettles: a gained target is passed to the hook at once (a kill -9 right after loses no
// owner); a removal waits ownershipSettle, so the close that ends an agent call costs no write at that
// moment, and a snapshot equal to the last is never passed.
func TestOwnershipHookSettles(t *testing.T) {
	type hookLog struct {
		mu  sync.Mutex
		got []map[string][]string
	}
	start := func(settle time.Duration) (*Mux, *fakeBrowser, func() []map[string][]string) {
		saved := ownershipSettle
		ownershipSettle = settle
		t.Cleanup(func() { ownershipSettle = saved })
		fb := newFakeBrowser(t)
		var l hookLog
		m := startMux(t, fb, Config{Hooks: Hooks{OwnershipChanged: func(o map[string][]string) {
			l.mu.Lock()
			l.got = append(l.got, o)
			l.mu.Unlock()
		}}})
		return m, fb, func() []map[string][]string {
			l.mu.Lock()
			defer l.mu.Unlock()
			return slices.Clone(l.got)
		}
	}
	closeTab := func(c *testClient, id string) time.Time { // returns when the close was sent
		t.Helper()
		sent := time.Now()
		if r := c.call("Target.closeTarget", `{"targetId":"`+id+`"}`, ""); r.Error != nil {
			t.Fatalf("closeTarget: %+v", r.Error)
		}
		return sent
	}
	newest := func(calls func() []map[string][]string) map[string][]string {
		if g := calls(); len(g) > 0 {
			return g[len(g)-1]
		}
		return nil
	}

	t.Run("gains at once, removals wait", func(t *testing.T) {
		m, _, calls := start(time.Hour) // a removal would wait an hour
		c := newClient(t, m, "s")
		t1 := c.createTarget("about:blank")
		testkit.WaitFor(t, 5*time.Second, "the new tab passed", func() bool { return slices.Contains(newest(calls)["s"], t1) })
		n := len(calls())
		closeTab(c, t1)
		time.Sleep(300 * time.Millisecond)
		if g := calls(); len(g) != n {
			t.Fatalf("a removal was passed at once: %v; want it waiting", g[n:])
		}
		// The waiting removal goes out with the next gain, in one snapshot.
		t2 := c.createTarget("about:blank")
		testkit.WaitFor(t, 5*time.Second, "the gain passed", func() bool { return slices.Contains(newest(calls)["s"], t2) })
		if g := calls(); len(g) != n+1 || slices.Contains(g[n]["s"], t1) {
			t.Errorf("after the gain the hook got %v; want one snapshot without the closed %s", g[n:], t1)
		}
	})
	t.Run("a removal is passed after the settle time", func(t *testing.T) {
		m, _, calls := start(100 * time.Millisecond)
		c := newClient(t, m, "s")
		t1 := c.createTarget("about:blank")
		t2 := c.createTarget("about:blank")
		testkit.WaitFor(t, 5*time.Second, "the tabs passed", func() bool { return slices.Contains(newest(calls)["s"], t2) })
		n := len(calls())
		sent := closeTab(c, t1)
		testkit.WaitFor(t, 5*time.Second, "the close passed", func() bool {
			g := calls()
			if len(g) > n && time.Since(sent) < ownershipSettle {
				t.Fatalf("a removal passed %v after the close; want no sooner than %v", time.Since(sent), ownershipSettle)
			}
			return len(g) == n+1 && !slices.Contains(g[n]["s"], t1) && slices.Contains(g[n]["s"], t2)
		})
		// A client that owns nothing connects and goes: ownership is signalled as changed, but the snapshot
		// equals the last one, so nothing is passed, after the settle time either.
		other := newClient(t, m, "idle")
		other.ws.Close()
		testkit.WaitFor(t, 5*time.Second, "the idle client gone", func() bool {
			for _, c := range m.Stats().PerClient {
				if c.ID == "idle" && c.Connected {
					return false
				}
			}
			return true
		})
		time.Sleep(3 * ownershipSettle) // proving an absence: no snapshot within three settle times
		if g := calls(); len(g) != n+1 {
			t.Errorf("%d snapshots for a client that owns nothing; want none: %v", len(g)-n-1, g[n+1:])
		}
	})
}

// TestNoGrace checks Grace: Off (the manager's VIBE_MUX_GRACE_S=0): a disconnected client's tabs close at
// once, and so do those of an adopted client that is not connected when the browser is.
func TestNoGrace(t *testing.T) {
	t.Run("disconnect", func(t *testing.T) {
		fb := newFakeBrowser(t)
		m := startMux(t, fb, Config{Grace: Off})
		c := newClient(t, m, "g")
		tid := c.createTarget("about:blank")
		c.ws.Close()
		testkit.WaitFor(t, 5*time.Second, "tab closed at once", func() bool { return !fb.hasTarget(tid) })
		testkit.WaitFor(t, 5*time.Second, "client forgotten", func() bool { return len(m.Stats().PerClient) == 0 })
		if ids := newClient(t, m, "g").targetIDs(); len(ids) != 0 {
			t.Fatalf("reconnected client sees %v; want no tabs", ids)
		}
	})
	t.Run("adopted", func(t *testing.T) {
		fb := newFakeBrowser(t)
		p1 := fb.addPage("https://task.example/", "")
		m := startMux(t, fb, Config{Grace: Off, Ownership: map[string][]string{"task1": {p1}}})
		testkit.WaitFor(t, 5*time.Second, "adopted tab closed", func() bool { return !fb.hasTarget(p1) })
		if o := m.Ownership(); len(o) != 0 {
			t.Fatalf("Ownership() = %v; want none", o)
		}
	})
}

func TestOrphanCleanup(t *testing.T) {
	tests := []struct {
		name      string
		fresh     bool
		keepLast  bool
		pages     []string
		wantClose int
	}{
		{name: "fresh launch closes orphans", fresh: true, pages: []string{"https://a/", "about:blank", "http://b/"}, wantClose: 2},
		{name: "adoption keeps them", fresh: false, pages: []string{"https://a/", "http://b/"}, wantClose: 0},
		{name: "keep last page", fresh: true, keepLast: true, pages: []string{"https://a/"}, wantClose: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fb := newFakeBrowser(t)
			for _, u := range tt.pages {
				fb.addPage(u, "")
			}
			m := startMux(t, fb, Config{FreshLaunch: tt.fresh, KeepLastPage: tt.keepLast})
			c := newClient(t, m, "c")
			c.call("Browser.getVersion", "", "") // after the startup work
			if got := len(fb.got("Target.closeTarget")); got != tt.wantClose {
				t.Fatalf("closed %d tabs; want %d", got, tt.wantClose)
			}
		})
	}
}

func TestAdoptOwnership(t *testing.T) { forEachTransport(t, testAdoptOwnership) }

func testAdoptOwnership(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	p1 := fb.addPage("https://task.example/", "")
	m := startMux(t, fb, Config{FreshLaunch: false, Ownership: map[string][]string{"task1": {p1, "GONE"}}})
	c := newClient(t, m, "task1")
	if ids := c.targetIDs(); !slices.Equal(ids, []string{p1}) {
		t.Fatalf("adopted client sees %v; want [%s]", ids, p1)
	}
	if o := m.Ownership(); !slices.Equal(o["task1"], []string{p1}) {
		t.Fatalf("Ownership() = %v", o)
	}
}

func TestKeepLastPageOnBrowserClose(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{KeepLastPage: true})
	c := newClient(t, m, "c")
	only := c.createTarget("about:blank")
	if r := c.call("Browser.close", "", ""); r.Error != nil {
		t.Fatal(r.Error)
	}
	c.call("Browser.getVersion", "", "")
	if !fb.hasTarget(only) || len(fb.got("Target.closeTarget")) != 0 {
		t.Fatal("the browser's last page was closed")
	}
	if ids := c.targetIDs(); len(ids) != 1 || ids[0] == only { // its tab stays listed; the page is disowned
		t.Fatalf("client still owns %v; want the kept last page disowned", ids)
	}
}
