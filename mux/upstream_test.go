package mux

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

func TestUpstreamLossAndReconnect(t *testing.T) { forEachTransport(t, testUpstreamLossAndReconnect) }

func testUpstreamLossAndReconnect(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	tid := c.createTarget("about:blank")
	sid := c.attach(tid)
	fb.setStall("Runtime.evaluate", true)
	c.sendRaw(`{"id":77,"method":"Runtime.evaluate","params":{"expression":"1"},"sessionId":"` + sid + `"}`)
	testkit.WaitFor(t, 5*time.Second, "call reached the browser", func() bool { return len(fb.got("Runtime.evaluate")) == 1 })
	fb.setStall("Runtime.evaluate", false)
	fb.drop()
	r := c.waitID("77")
	if r.Error == nil || r.Error.Code != codeInternal || r.Error.Message != "Browser disconnected" {
		t.Fatalf("pending call after loss: %+v; want -32603 Browser disconnected", r)
	}
	testkit.WaitFor(t, 5*time.Second, "detachedFromTarget for the lost session", func() bool { return len(c.events("Target.detachedFromTarget")) == 1 })
	testkit.WaitFor(t, 5*time.Second, "reconnected", func() bool { return fb.connections() == 2 && m.Stats().Upstream })
	if !slices.Contains(c.targetIDs(), tid) {
		t.Fatal("ownership lost across the reconnect")
	}
	if s := c.attach(tid); s == "" {
		t.Fatal("re-attach failed")
	}
}

// TestCloseDuringOutageHappensAfterReconnect: a tab the mux closes while the browser connection is down
// (here: its client's grace period ends) is closed once the browser is back, not left open and hidden.
func TestCloseDuringOutageHappensAfterReconnect(t *testing.T) {
	forEachTransport(t, testCloseDuringOutageHappensAfterReconnect)
}

func testCloseDuringOutageHappensAfterReconnect(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{Grace: 50 * time.Millisecond, ReconnectMin: 20 * time.Millisecond, ReconnectMax: 20 * time.Millisecond})
	c := newClient(t, m, "c")
	tid := c.createTarget("https://gone.example/")
	fb.refuse(true)
	fb.drop()
	testkit.WaitFor(t, 5*time.Second, "the loss noticed", func() bool { return !m.Stats().Upstream })
	c.ws.Close()
	testkit.WaitFor(t, 5*time.Second, "the client's grace period over", func() bool { return len(m.Stats().PerClient) == 0 })
	fb.refuse(false)
	testkit.WaitFor(t, 5*time.Second, "reconnected", func() bool { return fb.connections() == 2 && m.Stats().Upstream })
	testkit.WaitFor(t, 5*time.Second, "the tab closed in the browser after the reconnect", func() bool { return !fb.hasTarget(tid) })
}

// TestUpstreamRelaunchHook: the hook's endpoint may be of another transport than the lost one (the
// manager relaunches a browser behind a keeper, SPEC §13).
func TestUpstreamRelaunchHook(t *testing.T) {
	for _, tt := range []struct{ from, to upTransport }{
		{overWebSocket, overWebSocket}, {overKeeper, overKeeper}, {overWebSocket, overKeeper}, {overKeeper, overWebSocket},
	} {
		t.Run(string(tt.from)+" to "+string(tt.to), func(t *testing.T) { testUpstreamRelaunchHook(t, tt.from, tt.to) })
	}
}

func testUpstreamRelaunchHook(t *testing.T, from, to upTransport) {
	fb := newFakeBrowserOn(t, from)
	fb2 := newFakeBrowserOn(t, to)
	relaunched := make(chan struct{}, 1)
	m := startMux(t, fb, Config{ReconnectTries: 2, Hooks: Hooks{Relaunch: func(ctx context.Context) (string, error) {
		select {
		case relaunched <- struct{}{}:
		default:
		}
		return fb2.endpoint(), nil
	}}})
	c := newClient(t, m, "c")
	c.createTarget("https://restored.example/")
	fb2.next = 100                                           // new browser, new target ids
	restored := fb2.addPage("https://restored.example/", "") // the relaunched browser restores the session
	fb.gone()                                                // the old browser is gone for good
	testkit.WaitFor(t, 5*time.Second, "relaunch hook called and new browser connected", func() bool { return fb2.connections() == 1 && m.Stats().Upstream })
	testkit.WaitFor(t, 5*time.Second, "restored tab owned again", func() bool { return slices.Equal(c.targetIDs(), []string{restored}) })
}

func TestRelaunchedDialsAtOnce(t *testing.T) { forEachTransport(t, testRelaunchedDialsAtOnce) }

func testRelaunchedDialsAtOnce(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	fb2 := newFakeBrowserOn(t, tr)
	// Backoff far beyond the test: only Relaunched can bring the upstream back in time.
	m := startMux(t, fb, Config{ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	c := newClient(t, m, "c")
	c.createTarget("https://restored.example/")
	fb2.next = 100
	restored := fb2.addPage("https://restored.example/", "")
	orphan := fb2.addPage("https://nobody.example/", "") // restored, but its owner is not among the clients
	fb.gone()
	testkit.WaitFor(t, 5*time.Second, "the loss noticed", func() bool { return !m.Stats().Upstream })
	m.Relaunched(fb2.endpoint())
	testkit.WaitFor(t, 5*time.Second, "the relaunched browser connected", func() bool { return fb2.connections() == 1 && m.Stats().Upstream })
	testkit.WaitFor(t, 5*time.Second, "restored tab owned again", func() bool { return slices.Equal(c.targetIDs(), []string{restored}) })
	testkit.WaitFor(t, 5*time.Second, "the unclaimed restored tab closed", func() bool { return !fb2.hasTarget(orphan) })
	if !fb2.hasTarget(restored) {
		t.Fatal("the owned restored tab was closed")
	}
}

// TestReplacementDialledWhenNamed: a relaunched browser's keeper listens where the crashed one's did. Told
// that its browser is being replaced, the mux dials nothing until Relaunched names the new one, however short
// its backoff, so that it never reaches the new browser early and then drops that connection as the old
// one's, failing the calls on it (seen as a restored tab's attach failing in the crash test).
func TestReplacementDialledWhenNamed(t *testing.T) {
	fb := newFakeBrowserOn(t, overKeeper)
	m := startMux(t, fb, Config{ReconnectMin: 5 * time.Millisecond, ReconnectMax: 5 * time.Millisecond})
	c := newClient(t, m, "c")
	c.createTarget("https://restored.example/")
	m.Replacing()
	fb.gone()
	testkit.WaitFor(t, 5*time.Second, "the loss noticed", func() bool { return !m.Stats().Upstream })

	fb2 := newFakeBrowser(t)
	fb2.next = 100
	restored := fb2.addPage("https://restored.example/", "")
	fb2.kp = newFakeKeeperAt(t, fb2, fb.kp.socket) // the replacement, on the same path, before it is named
	time.Sleep(300 * time.Millisecond)             // sixty backoffs
	if n := fb2.connections(); n != 0 {
		t.Fatalf("the mux dialled the replacement %d times before it was named", n)
	}
	m.Relaunched(fb2.endpoint())
	testkit.WaitFor(t, 5*time.Second, "the named replacement connected", func() bool { return fb2.connections() == 1 && m.Stats().Upstream })
	testkit.WaitFor(t, 5*time.Second, "restored tab owned again", func() bool { return slices.Equal(c.targetIDs(), []string{restored}) })
	sid := c.attach(restored)
	if r := c.call("Runtime.evaluate", `{"expression":"1"}`, sid); r.Error != nil {
		t.Fatalf("a call on the replacement failed: %+v", r.Error)
	}
	if n := fb2.connections(); n != 1 {
		t.Fatalf("%d connections to the replacement; want the one, never dropped", n)
	}
}

func TestSilentBrowserIsDropped(t *testing.T) { forEachTransport(t, testSilentBrowserIsDropped) }

func testSilentBrowserIsDropped(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	// The pong timeout is long next to the 20 ms between the browser's events: on a loaded machine (the whole
	// suite on 2 cores) a sleeping goroutine of the fake browser has woken 150 ms late.
	m := startMux(t, fb, Config{PingInterval: 100 * time.Millisecond, PongTimeout: time.Second})
	c := newClient(t, m, "c")
	tid := c.createTarget("about:blank")
	sid := c.attach(tid)
	fb.setStall("Browser.getVersion", true) // the probe goes unanswered

	// Busy but alive: the browser keeps sending events, so it is never taken for hung.
	until := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(until) {
		fb.send(`{"method":"Target.targetInfoChanged","params":{"targetInfo":{"targetId":"` + tid + `","type":"page","url":"about:blank"}}}`)
		time.Sleep(20 * time.Millisecond)
	}
	if n := fb.connections(); n != 1 {
		t.Fatalf("a talking browser was dropped: %d connections", n)
	}

	// Hung: nothing at all arrives. The connection is dropped, the call in flight fails, the mux reconnects.
	fb.setStall("Runtime.evaluate", true)
	c.sendRaw(`{"id":77,"method":"Runtime.evaluate","params":{"expression":"1"},"sessionId":"` + sid + `"}`)
	r := c.waitID("77")
	if r.Error == nil || r.Error.Code != codeInternal || r.Error.Message != "Browser disconnected" {
		t.Fatalf("call in flight on a hung browser: %+v; want -32603 Browser disconnected", r)
	}
	fb.setStall("Browser.getVersion", false)
	fb.setStall("Runtime.evaluate", false)
	testkit.WaitFor(t, 5*time.Second, "reconnected", func() bool { return fb.connections() >= 2 && m.Stats().Upstream })
	if !slices.Contains(c.targetIDs(), tid) {
		t.Fatal("ownership lost across the reconnect")
	}
}

func TestWebSocketUpstream(t *testing.T) {
	fb := newFakeBrowser(t)
	ws := "ws" + strings.TrimPrefix(fb.url(), "http") + "/devtools/browser/fake"
	m := startMux(t, fb, Config{Upstream: ws})
	testkit.WaitFor(t, 5*time.Second, "version cached from Browser.getVersion", func() bool {
		resp, err := http.Get("http://" + m.Addr() + "/tok/json/version")
		if err != nil {
			return false
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode == 200 && strings.Contains(string(b), "FakeChrome/1.0") && strings.Contains(string(b), "ws://"+m.Addr()+"/tok/")
	})
	c := newClient(t, m, "c")
	if id := c.createTarget("about:blank"); !slices.Contains(c.targetIDs(), id) {
		t.Fatal("client on a ws:// upstream does not own its tab")
	}
}

func TestUpstreamFramesAndPings(t *testing.T) { forEachTransport(t, testUpstreamFramesAndPings) }

func testUpstreamFramesAndPings(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	r := c.call("Test.fragmented", "", "")
	want := strings.Repeat("f", 10000) + strings.Repeat("g", 10000)
	if !strings.Contains(string(r.Result), want) {
		t.Fatalf("fragmented answer mangled (%d bytes)", len(r.Result))
	}
	c.call("Test.ping", "", "")
	if tr == overWebSocket { // a keeper's socket has no pings; that nothing but JSON reaches it is checked at its close
		testkit.WaitFor(t, 5*time.Second, "pong to the browser's ping", func() bool {
			fb.mu.Lock()
			defer fb.mu.Unlock()
			return slices.Contains(fb.pongs, "hi")
		})
	}
	if r := c.call("Browser.getVersion", "", ""); r.Error != nil {
		t.Fatal(r.Error)
	}
}

func TestOversizedUpstreamMessage(t *testing.T) { forEachTransport(t, testOversizedUpstreamMessage) }

func testOversizedUpstreamMessage(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{UpstreamMessageLimit: 100 << 10})
	c := newClient(t, m, "c")
	r := c.call("Test.big", `{"size":200000}`, "")
	if r.Error == nil || r.Error.Code != codeServer {
		t.Fatalf("oversized answer: %+v; want error %d", r, codeServer)
	}
	r = c.call("Test.big", `{"size":1000}`, "")
	if r.Error != nil || len(r.Result) < 1000 {
		t.Fatalf("after oversized: %+v", r.Error)
	}
	if n := fb.connections(); n != 1 {
		t.Fatalf("upstream reconnected %d times; want it to survive", n-1)
	}
}

func TestBigClientMessageReachesBrowser(t *testing.T) {
	forEachTransport(t, testBigClientMessageReachesBrowser)
}

func testBigClientMessageReachesBrowser(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	sid := c.attach(c.createTarget("about:blank"))
	expr := strings.Repeat("q", 1<<20)
	r := c.call("Runtime.evaluate", `{"expression":"`+expr+`"}`, sid)
	if !strings.Contains(string(r.Result), expr) {
		t.Fatalf("1 MiB command mangled on its way (answer %d bytes)", len(r.Result))
	}
}
