package mux

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

func TestAutoAttachVirtual(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	pw := newClient(t, m, "pw") // playwright-like: auto-attach, pause on start, default filter
	other := newClient(t, m, "other")
	pre := pw.createTarget("about:blank")
	r := pw.call("Target.setAutoAttach", `{"autoAttach":true,"waitForDebuggerOnStart":true,"flatten":true}`, "")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	for _, got := range fb.got("Target.setAutoAttach") {
		if string(got.Params) != string(upstreamAutoAttach) {
			t.Fatalf("a client's setAutoAttach reached the browser: %s", got.Params)
		}
	}
	att := pw.events("Target.attachedToTarget")
	if len(att) != 1 || !strings.Contains(string(att[0].Params), pre) {
		t.Fatalf("existing target not auto-attached before the answer: %v", att)
	}

	// A new target's attachedToTarget precedes the createTarget answer, as on Chrome.
	before := len(pw.all())
	tid := pw.createTarget("about:blank")
	var order []string
	for _, raw := range pw.all()[before:] {
		var m cdpMsg
		json.Unmarshal(raw, &m)
		if m.Method == "Target.attachedToTarget" && strings.Contains(string(m.Params), tid) {
			order = append(order, "attached")
		}
		if m.Method == "" && strings.Contains(string(m.Result), tid) {
			order = append(order, "created")
		}
	}
	if !slices.Equal(order, []string{"attached", "created"}) {
		t.Fatalf("order %v; want [attached created]", order)
	}

	// Another client's new tab is neither attached for pw nor paused.
	ot := other.createTarget("about:blank")
	other.call("Browser.getVersion", "", "")
	pw.call("Browser.getVersion", "", "")
	for _, e := range pw.events("Target.attachedToTarget") {
		if strings.Contains(string(e.Params), ot) {
			t.Fatal("pw was auto-attached to another client's tab")
		}
	}
	if n := len(other.events("Target.attachedToTarget")); n != 0 {
		t.Fatalf("other got %d attach events it never asked for", n)
	}

	// setAutoAttach(false) by one client detaches nobody.
	so := other.attach(ot)
	other.call("Target.setAutoAttach", `{"autoAttach":false,"waitForDebuggerOnStart":false}`, "")
	if r := other.call("Runtime.evaluate", `{"expression":"1"}`, so); r.Error != nil {
		t.Fatalf("other's session after its setAutoAttach(false): %+v", r.Error)
	}
}

func TestDiscoverVirtual(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	ta := a.createTarget("about:blank")
	if r := b.call("Target.setDiscoverTargets", `{"discover":true}`, ""); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r := a.call("Target.setDiscoverTargets", `{"discover":true,"filter":[{}]}`, ""); r.Error != nil {
		t.Fatal(r.Error)
	}
	if n := len(fb.got("Target.setDiscoverTargets")); n != 1 { // the mux's own
		t.Fatalf("setDiscoverTargets reached the browser %d times; want only the mux's", n)
	}
	if got := a.events("Target.targetCreated"); len(got) != 2 { // its tab and page
		t.Fatalf("a's replay: %d targetCreated; want 2", len(got))
	}
	tb := b.createTarget("about:blank")
	popup := fb.addPage("https://popup.example/", ta)
	testkit.WaitFor(t, 5*time.Second, "popup announced to a", func() bool {
		for _, e := range a.events("Target.targetCreated") {
			if strings.Contains(string(e.Params), popup) {
				return true
			}
		}
		return false
	})
	if !slices.Contains(a.targetIDs(), popup) || slices.Contains(b.targetIDs(), popup) {
		t.Fatal("popup not owned by its opener's client")
	}
	for _, e := range a.events("Target.targetCreated") {
		if strings.Contains(string(e.Params), tb) {
			t.Fatal("a saw b's target")
		}
	}
	for _, e := range b.events("Target.targetCreated") {
		if strings.Contains(string(e.Params), ta) || strings.Contains(string(e.Params), popup) {
			t.Fatal("b saw a's target")
		}
	}
}

func TestSessionDiscoverVirtual(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	ta := a.createTarget("about:blank")
	sa := a.attach(ta)
	// chromedp enables discovery on its page session.
	if r := a.call("Target.setDiscoverTargets", `{"discover":true}`, sa); r.Error != nil {
		t.Fatal(r.Error)
	}
	if n := len(fb.got("Target.setDiscoverTargets")); n != 1 {
		t.Fatalf("session setDiscoverTargets forwarded (%d)", n)
	}
	b.createTarget("about:blank")
	popup := fb.addPage("https://popup/", ta)
	testkit.WaitFor(t, 5*time.Second, "popup announced on a's session", func() bool {
		for _, e := range a.events("Target.targetCreated") {
			if e.SessionID == sa && strings.Contains(string(e.Params), popup) {
				return true
			}
		}
		return false
	})
	for _, e := range a.events("Target.targetCreated") {
		var p struct{ TargetInfo struct{ TargetID string } }
		json.Unmarshal(e.Params, &p)
		if !fb.hasTarget(p.TargetInfo.TargetID) || !slices.Contains(a.targetIDs(), p.TargetInfo.TargetID) {
			t.Fatalf("a's session discovered %s, not a's", p.TargetInfo.TargetID)
		}
	}
}

func TestChildSessionsAndResume(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	ta := a.createTarget("about:blank")
	sa := a.attach(ta)
	fb.send(`{"method":"Target.attachedToTarget","params":{"sessionId":"CHILD1","targetInfo":{"targetId":"IFRAME1","type":"iframe","url":"http://other/"},"waitingForDebugger":true},"sessionId":"` + sa + `"}`)
	fb.send(`{"method":"Network.requestWillBeSent","params":{},"sessionId":"CHILD1"}`)
	testkit.WaitFor(t, 5*time.Second, "child session events at a", func() bool {
		return len(a.events("Target.attachedToTarget")) == 2 && len(a.events("Network.requestWillBeSent")) == 1
	})
	if r := a.call("Runtime.runIfWaitingForDebugger", "", "CHILD1"); r.Error != nil {
		t.Fatalf("a on its child session: %+v", r.Error)
	}
	if r := b.call("Runtime.evaluate", `{"expression":"1"}`, "CHILD1"); r.Error == nil {
		t.Fatal("b used a's child session")
	}

	// A target nobody here asked to pause is resumed by the mux.
	fb.addPage("https://human.example/", "")
	fb.send(`{"method":"Target.attachedToTarget","params":{"sessionId":"ORPHAN","targetInfo":{"targetId":"NOPE","type":"page","url":""},"waitingForDebugger":true}}`)
	testkit.WaitFor(t, 5*time.Second, "mux resumes the orphan", func() bool {
		for _, g := range fb.got("Runtime.runIfWaitingForDebugger") {
			if g.SessionID == "ORPHAN" {
				return true
			}
		}
		return false
	})
}
