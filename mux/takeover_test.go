package mux

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

func heldBy(m *Mux, tid string) string {
	for _, ci := range m.op.Clients() {
		for _, tab := range ci.Tabs {
			if tab.ID == tid {
				return tab.HeldBy
			}
		}
	}
	return ""
}

// The hold rules over every command shape: what a client may still do while a person holds its tab, and
// that nothing refused reaches the browser.
func TestHoldRules(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	pa := a.createTarget("https://a.example/")
	sa := a.attach(pa)
	pb := b.createTarget("https://b.example/")
	sb := b.attach(pb)
	// A frame of a's tab in its own session (an OOPIF): the person's too.
	fb.send(`{"method":"Target.attachedToTarget","params":{"sessionId":"CHILD1","targetInfo":{"targetId":"IFRAME1","type":"iframe","url":"https://frame.example/"},"waitingForDebugger":false},"sessionId":"` + sa + `"}`)
	testkit.WaitFor(t, 5*time.Second, "the frame's session at a", func() bool {
		_, ok := attachOf(a, "IFRAME1")
		return ok
	})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := m.op.View(ctx, pa, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Hold("alice"); err != nil {
		t.Fatal(err)
	}
	if got := heldBy(m, pa); got != "alice" {
		t.Fatalf("Clients shows the tab held by %q; want alice", got)
	}
	other, err := m.op.View(ctx, pa, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Hold("bob"); !errors.Is(err, ErrHeldByOther) {
		t.Fatalf("a second holder: %v; want ErrHeldByOther", err)
	}

	fresh := a.createTarget("https://a.example/new") // made while held: not held
	sfresh := a.attach(fresh)
	tests := []struct {
		name           string
		c              *testClient
		method, params string
		session        string
		refused        bool
	}{
		{"a command on the held tab's session", a, "Runtime.evaluate", `{"expression":"1"}`, sa, true},
		{"a command on a frame of the held tab", a, "Runtime.evaluate", `{"expression":"1"}`, "CHILD1", true},
		{"attaching to the held tab", a, "Target.attachToTarget", `{"targetId":"` + pa + `","flatten":true}`, "", true},
		{"closing the held tab", a, "Target.closeTarget", `{"targetId":"` + pa + `"}`, "", true},
		{"activating the held tab", a, "Target.activateTarget", `{"targetId":"` + pa + `"}`, "", true},
		{"closing the held page's tab target", a, "Target.closeTarget", `{"targetId":"` + strings.Replace(pa, "PAGE", "TAB", 1) + `"}`, "", true},
		{"reading the held tab's info", a, "Target.getTargetInfo", `{"targetId":"` + pa + `"}`, "", false},
		{"listing targets", a, "Target.getTargets", `{}`, "", false},
		{"a command on a tab made while held", a, "Runtime.evaluate", `{"expression":"2"}`, sfresh, false},
		{"another client's command on its own tab", b, "Runtime.evaluate", `{"expression":"3"}`, sb, false},
	}
	for _, tt := range tests {
		before := len(fb.got(tt.method))
		r := tt.c.call(tt.method, tt.params, tt.session)
		refused := r.Error != nil && r.Error.Code == codeServer && r.Error.Message == HeldMessage
		if refused != tt.refused {
			t.Errorf("%s: error %+v; want refused=%v", tt.name, r.Error, tt.refused)
		}
		if forwarded := len(fb.got(tt.method)) > before; forwarded == tt.refused {
			t.Errorf("%s: forwarded=%v; a refused command must not reach the browser, an allowed one must", tt.name, forwarded)
		}
	}

	v.Release()
	if got := heldBy(m, pa); got != "" {
		t.Fatalf("after Release the tab is held by %q", got)
	}
	if r := a.call("Runtime.evaluate", `{"expression":"4"}`, sa); r.Error != nil {
		t.Fatalf("a's command after Release: %+v", r.Error)
	}
	if err := other.Hold("bob"); err != nil {
		t.Fatalf("taking a released tab: %v", err)
	}
}

// The owner's Browser.close closes its tabs but the one a person holds: that one closes when they let go.
func TestHoldSurvivesOwnersBrowserClose(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	held := a.createTarget("https://a.example/held")
	other := a.createTarget("https://a.example/other")
	v, err := m.op.View(context.Background(), held, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := v.Hold("alice"); err != nil {
		t.Fatal(err)
	}
	if r := a.call("Browser.close", "", ""); r.Error != nil {
		t.Fatalf("Browser.close: %+v", r.Error)
	}
	testkit.WaitFor(t, 5*time.Second, "the owner's other tab to close", func() bool { return !fb.hasTarget(other) })
	if !fb.hasTarget(held) || heldBy(m, held) != "alice" {
		t.Fatal("the owner's Browser.close closed the tab a person holds")
	}
	v.Release()
	testkit.WaitFor(t, 5*time.Second, "the released tab to close as its owner asked", func() bool { return !fb.hasTarget(held) })
}

// A hold outlives its holder's view for the grace, is taken up again by the holder's next view, and
// ends when the tab closes; the tab cap never closes a held tab.
func TestHoldGraceAndTabCap(t *testing.T) {
	fb := newFakeBrowser(t)
	const grace = 300 * time.Millisecond
	m := startMux(t, fb, Config{HoldGrace: grace, TabCap: 1})
	a := newClient(t, m, "a")
	pa := a.createTarget("https://a.example/")
	sa := a.attach(pa)
	ctx := context.Background()
	v, err := m.op.View(ctx, pa, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Hold("alice"); err != nil {
		t.Fatal(err)
	}

	// Over the cap of 1 with the held tab the least recently used: the cap closes nothing held.
	second := a.createTarget("https://a.example/2")
	a.call("Browser.getVersion", "", "")
	if !fb.hasTarget(pa) || !fb.hasTarget(second) {
		t.Fatal("the tab cap closed a tab while the other one is held by a person")
	}

	v.Close()
	if r := a.call("Runtime.evaluate", `{"expression":"1"}`, sa); r.Error == nil || r.Error.Message != HeldMessage {
		t.Fatalf("right after the holder's view closed: %+v; want the hold kept for the grace", r.Error)
	}
	back, err := m.op.View(ctx, pa, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Hold("alice"); err != nil {
		t.Fatalf("the holder's view after a reconnect: %v", err)
	}
	time.Sleep(2 * grace)
	if got := heldBy(m, pa); got != "alice" {
		t.Fatalf("the reconnected holder lost the hold after the grace (held by %q)", got)
	}
	back.Close()
	testkit.WaitFor(t, 5*time.Second, "the hold to end after the grace", func() bool { return heldBy(m, pa) == "" })
	if r := a.call("Runtime.evaluate", `{"expression":"2"}`, sa); r.Error != nil {
		t.Fatalf("a's command after the grace: %+v", r.Error)
	}

	// The tab closing ends its hold.
	w, err := m.op.View(ctx, second, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Hold("alice"); err != nil {
		t.Fatal(err)
	}
	fb.mu.Lock()
	fb.removeLocked(second)
	fb.mu.Unlock()
	testkit.WaitFor(t, 5*time.Second, "the closed tab's view to end", func() bool {
		select {
		case <-w.Done():
			return true
		default:
			return false
		}
	})
	testkit.WaitFor(t, 5*time.Second, "the closed tab and its hold to be gone", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.targets[second] == nil
	})
	if w.Holding() {
		t.Fatal("a view of a closed tab still holds it")
	}
}
