package mux

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

// attachOf returns the client's attachedToTarget event for target tid, if any.
func attachOf(c *testClient, tid string) (ev struct {
	SessionID          string `json:"sessionId"`
	WaitingForDebugger bool   `json:"waitingForDebugger"`
}, ok bool) {
	for _, e := range c.events("Target.attachedToTarget") {
		if strings.Contains(string(e.Params), `"targetId":"`+tid+`"`) {
			json.Unmarshal(e.Params, &ev)
			return ev, true
		}
	}
	return ev, false
}

func resumed(fb *fakeBrowser, sid string) bool {
	for _, g := range fb.got("Runtime.runIfWaitingForDebugger") {
		if g.SessionID == sid {
			return true
		}
	}
	return false
}

// A popup reaches a client that asked to pause new targets still paused, as on Chrome: nothing of it has
// run before the client resumes it, and the mux attaches it once.
func TestPopupArrivesPaused(t *testing.T) { forEachTransport(t, testPopupArrivesPaused) }

func testPopupArrivesPaused(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	pw := newClient(t, m, "pw")
	pw.call("Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}`, "")
	opener := pw.createTarget("about:blank")
	attachesBefore := len(fb.got("Target.attachToTarget"))
	popup := fb.addPage("https://popup.example/", opener)
	var ev struct {
		SessionID          string `json:"sessionId"`
		WaitingForDebugger bool   `json:"waitingForDebugger"`
	}
	testkit.WaitFor(t, 5*time.Second, "the popup's attach at its opener's client", func() bool {
		var ok bool
		ev, ok = attachOf(pw, popup)
		return ok
	})
	if !ev.WaitingForDebugger {
		t.Fatal("popup reached its client running; want paused (waitingForDebugger)")
	}
	pw.call("Browser.getVersion", "", "") // everything the mux did for the popup has reached the fake
	fb.mu.Lock()
	paused := fb.paused[ev.SessionID]
	fb.mu.Unlock()
	if !paused {
		t.Fatal("the mux resumed a popup its client asked to get paused")
	}
	if n := len(fb.got("Target.attachToTarget")) - attachesBefore; n != 0 {
		t.Fatalf("the mux attached the popup %d more times; want Chrome's one paused attach", n)
	}
	if r := pw.call("Runtime.runIfWaitingForDebugger", "", ev.SessionID); r.Error != nil {
		t.Fatalf("client resuming its popup: %+v", r.Error)
	}
	if !resumed(fb, ev.SessionID) {
		t.Fatal("the client's runIfWaitingForDebugger did not reach the browser")
	}
}

// A client that asked for auto-attach without the pause gets its new page running; a page nobody's
// auto-attach wants runs at once, the mux lets go of it, and its owner sees no "attached" flip.
func TestNewPagesNotWantedPausedRun(t *testing.T) {
	forEachTransport(t, testNewPagesNotWantedPausedRun)
}

func testNewPagesNotWantedPausedRun(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	noWait := newClient(t, m, "nowait")
	noWait.call("Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":false,"flatten":true}`, "")
	plain := newClient(t, m, "plain")
	plain.call("Target.setDiscoverTargets", `{"discover":true}`, "")

	opener := noWait.createTarget("about:blank")
	popup := fb.addPage("https://popup.example/", opener)
	testkit.WaitFor(t, 5*time.Second, "the popup's attach", func() bool {
		_, ok := attachOf(noWait, popup)
		return ok
	})
	ev, _ := attachOf(noWait, popup)
	if ev.WaitingForDebugger {
		t.Fatal("a client that did not ask for the pause was told its page waits")
	}
	noWait.call("Browser.getVersion", "", "")
	if !resumed(fb, ev.SessionID) {
		t.Fatal("the mux left paused a page whose client did not ask for the pause")
	}

	page := plain.createTarget("about:blank")                // held for its create while Chrome attaches it
	plainPopup := fb.addPage("https://popup.example/", page) // owned from its announcement
	plain.call("Browser.getVersion", "", "")
	for _, tid := range []string{page, plainPopup} {
		if sid := fb.sessionOf(tid); sid != "" {
			t.Fatalf("the mux still holds a session (%s) on %s, which nobody auto-attaches", sid, tid)
		}
		if _, ok := attachOf(plain, tid); ok {
			t.Fatal("a client that never asked for auto-attach got an attach")
		}
	}
	for _, e := range plain.events("Target.targetInfoChanged") {
		t.Fatalf("owner saw the mux's own session come and go: %s", e.Params)
	}
	created := plain.events("Target.targetCreated")
	if len(created) != 2 { // the default filter: pages, no tabs
		t.Fatalf("%d targetCreated; want 2, its page and popup", len(created))
	}
	for _, e := range created {
		if strings.Contains(string(e.Params), `"attached":true`) {
			t.Fatalf("announced attached to an owner that never attached: %s", e.Params)
		}
	}
}

// After a reconnect Chrome replays its auto-attach of every existing page: none of those sessions is
// handed to a client, and each is let go.
func TestAutoAttachReplayLetGo(t *testing.T) { forEachTransport(t, testAutoAttachReplayLetGo) }

func testAutoAttachReplayLetGo(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	pw := newClient(t, m, "pw")
	pw.call("Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}`, "")
	page := pw.createTarget("about:blank")
	before := len(pw.events("Target.attachedToTarget"))
	fb.drop()
	testkit.WaitFor(t, 10*time.Second, "the mux reconnected and re-attached pw's page", func() bool {
		return fb.connections() == 2 && len(pw.events("Target.attachedToTarget")) > before
	})
	pw.call("Browser.getVersion", "", "")
	n := 0
	for _, e := range pw.events("Target.attachedToTarget")[before:] {
		if strings.Contains(string(e.Params), page) {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("pw got %d attaches of its page after the reconnect; want its one virtual auto-attach", n)
	}
	fb.mu.Lock()
	defer fb.mu.Unlock()
	sessions := 0
	for _, tid := range fb.sessions {
		if tid == page {
			sessions++
		}
	}
	if sessions != 1 {
		t.Fatalf("%d sessions on the page in the browser; want pw's alone (the replayed one let go)", sessions)
	}
}
