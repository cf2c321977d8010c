package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"

	"vibebrowser/integration/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func TestHTTPChecks(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{MaxClients: 1})
	port := m.Addr()[strings.LastIndex(m.Addr(), ":")+1:]
	tests := []struct {
		name   string
		path   string
		host   string
		origin string
		want   int
		body   string
	}{
		{name: "no token", path: "/json/version", want: 401},
		{name: "wrong token", path: "/nope/json/version", want: 401},
		{name: "token prefix only", path: "/tokx/json/version", want: 401},
		{name: "origin header", path: "/tok/json/version", origin: "http://evil.example", want: 403},
		{name: "foreign host", path: "/tok/json/version", host: "evil.example:" + port, want: 403},
		{name: "host other port", path: "/tok/json/version", host: "127.0.0.1:1", want: 403},
		{name: "version", path: "/tok/json/version", want: 200, body: `"webSocketDebuggerUrl": "ws://127.0.0.1:` + port + `/tok/devtools/browser/`},
		{name: "version slash", path: "/tok/json/version/", want: 200, body: `FakeChrome/1.0`},
		{name: "version localhost", path: "/tok/json/version", host: "localhost:" + port, want: 200, body: `ws://localhost:` + port + `/tok/`},
		{name: "list leaks nothing", path: "/tok/json/list", want: 200, body: "[]"},
		{name: "unknown", path: "/tok/json/new", want: 404},
	}
	fb.addPage("https://secret.example/", "")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://"+m.Addr()+tt.path, nil)
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("GET %s = %d; want %d (%s)", tt.path, resp.StatusCode, tt.want, b)
			}
			if !strings.Contains(string(b), tt.body) {
				t.Fatalf("GET %s body %s; want it to contain %s", tt.path, b, tt.body)
			}
			if strings.Contains(string(b), fb.srv.Listener.Addr().String()) || strings.Contains(string(b), "secret") {
				t.Fatalf("GET %s leaks upstream data: %s", tt.path, b)
			}
		})
	}

	upgrades := []struct {
		name   string
		path   string
		origin string
		want   int
	}{
		{name: "ws no token", path: "/client-a", want: 401},
		{name: "ws wrong token", path: "/bad/client-a", want: 401},
		{name: "ws origin", path: "/tok/client-a", origin: "http://evil.example", want: 403},
		{name: "ws bad id", path: "/tok/client-a.b", want: 400},
	}
	for _, tt := range upgrades {
		t.Run(tt.name, func(t *testing.T) {
			hdr := http.Header{}
			if tt.origin != "" {
				hdr.Set("Origin", tt.origin)
			}
			ws, resp, err := dialMux(t, m, tt.path, hdr)
			if err == nil {
				ws.Close()
				t.Fatalf("dial %s upgraded; want %d", tt.path, tt.want)
			}
			if resp == nil || resp.StatusCode != tt.want {
				t.Fatalf("dial %s = %v; want status %d", tt.path, resp, tt.want)
			}
		})
	}

	t.Run("503 over max clients", func(t *testing.T) {
		newClient(t, m, "first")
		testkit.WaitFor(t, 5*time.Second, "first client connected", func() bool { return m.Stats().Clients == 1 })
		ws, resp, err := dialMux(t, m, "/tok/client-second", nil)
		if err == nil {
			ws.Close()
			t.Fatal("second client upgraded over MaxClients=1")
		}
		if resp == nil || resp.StatusCode != 503 {
			t.Fatalf("second client: %v; want 503", resp)
		}
	})
}

func TestDiscoveryClientGetsOwnID(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	for range 2 {
		ws, _, err := dialMux(t, m, "/tok/devtools/browser/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ws.Close() })
	}
	testkit.WaitFor(t, 5*time.Second, "two anonymous clients", func() bool {
		s := m.Stats()
		return s.Clients == 2 && strings.HasPrefix(s.PerClient[0].ID, "anon-") && s.PerClient[0].ID != s.PerClient[1].ID
	})
}

func TestIsolation(t *testing.T) {
	fb := newFakeBrowser(t)
	human := fb.addPage("https://human.example/", "")
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	ta := a.createTarget("about:blank")
	tb := b.createTarget("about:blank")

	ga, gb := a.targetIDs(), b.targetIDs()
	if !slices.Contains(ga, ta) || slices.Contains(ga, tb) || slices.Contains(ga, human) {
		t.Fatalf("a sees %v; want its %s only (plus its tab)", ga, ta)
	}
	if !slices.Contains(gb, tb) || slices.Contains(gb, ta) {
		t.Fatalf("b sees %v; want its %s only", gb, tb)
	}

	for _, method := range []string{"Target.attachToTarget", "Target.closeTarget", "Target.activateTarget", "Target.getTargetInfo"} {
		t.Run(method, func(t *testing.T) {
			before := len(fb.got(method))
			for _, victim := range []string{ta, human} {
				r := b.call(method, fmt.Sprintf(`{"targetId":%q,"flatten":true}`, victim), "")
				if r.Error == nil || r.Error.Code != codeInvalid {
					t.Fatalf("b %s(%s) = %+v; want error %d", method, victim, r, codeInvalid)
				}
			}
			if n := len(fb.got(method)); n != before {
				t.Fatalf("%s reached the browser %d times; want 0", method, n-before)
			}
		})
	}

	sa := a.attach(ta)
	t.Run("foreign session refused", func(t *testing.T) {
		before := len(fb.got("Runtime.evaluate"))
		r := b.call("Runtime.evaluate", `{"expression":"1"}`, sa)
		if r.Error == nil || r.Error.Code != codeNoSession {
			t.Fatalf("b on a's session = %+v; want error %d", r, codeNoSession)
		}
		if n := len(fb.got("Runtime.evaluate")); n != before {
			t.Fatalf("foreign session command forwarded")
		}
		r = a.call("Runtime.evaluate", `{"expression":"\"<b>&\""}`, sa)
		if got := string(r.Result); !strings.Contains(got, `"value":"\"<b>&\""`) {
			t.Fatalf("a's evaluate result %s; want the bytes as the browser sent them", got)
		}
	})
	t.Run("events only to owner", func(t *testing.T) {
		fb.send(`{"method":"Runtime.consoleAPICalled","params":{"type":"log"},"sessionId":"` + sa + `"}`)
		testkit.WaitFor(t, 5*time.Second, "event at a", func() bool { return len(a.events("Runtime.consoleAPICalled")) == 1 })
		b.call("Browser.getVersion", "", "") // a round trip orders b's stream after the event
		if n := len(b.events("Runtime.consoleAPICalled")); n != 0 {
			t.Fatalf("b got %d of a's events", n)
		}
	})
}

func TestMalformedAndIDs(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{ClientMessageLimit: 4096})
	c := newClient(t, m, "c")
	tests := []struct {
		name     string
		send     string
		wantID   string // "" = no id in the answer
		wantCode int
	}{
		{name: "truncated with id", send: `{"id":7,"method":"Browser.getVersion"`, wantID: "7", wantCode: codeParse},
		{name: "bad params", send: `{"id":10,"method":"Runtime.evaluate","params":{bad}}`, wantID: "10", wantCode: codeParse},
		{name: "garbage", send: `not json`, wantCode: codeParse},
		{name: "array", send: `[1,2]`, wantCode: codeParse},
		{name: "no id", send: `{"method":"Browser.getVersion"}`, wantCode: codeInvalid},
		{name: "string id", send: `{"id":"x","method":"Browser.getVersion"}`, wantID: `"x"`, wantCode: codeInvalid},
		{name: "fraction id", send: `{"id":1.5,"method":"Browser.getVersion"}`, wantID: "1.5", wantCode: codeInvalid},
		{name: "no method", send: `{"id":8}`, wantID: "8", wantCode: codeInvalid},
		{name: "oversized", send: `{"id":9,"method":"Runtime.evaluate","params":{"expression":"` + strings.Repeat("a", 5000) + `"}}`, wantID: "9", wantCode: codeServer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(c.all())
			c.sendRaw(tt.send)
			var got cdpMsg
			testkit.WaitFor(t, 5*time.Second, "error answer", func() bool {
				all := c.all()
				if len(all) <= before {
					return false
				}
				return json.Unmarshal(all[before], &got) == nil
			})
			if got.Error == nil || got.Error.Code != tt.wantCode || string(got.ID) != tt.wantID {
				t.Fatalf("send %.40q: got id %s error %+v; want id %q code %d", tt.send, got.ID, got.Error, tt.wantID, tt.wantCode)
			}
			// The connection survives.
			if r := c.call("Browser.getVersion", "", ""); r.Error != nil {
				t.Fatalf("after %s: %+v", tt.name, r.Error)
			}
		})
	}
	t.Run("non-int32 integer id is rewritten", func(t *testing.T) {
		for _, id := range []string{"9007199254740993", "-5", "2147483648", "0"} {
			c.sendRaw(`{"id":` + id + `,"method":"Browser.getVersion"}`)
			r := c.waitID(id)
			if r.Error != nil || !strings.Contains(string(r.Result), "FakeChrome") {
				t.Fatalf("id %s: %+v; want the browser's answer under the original id", id, r)
			}
		}
	})
}

func TestIDsWrapAndSkipInFlight(t *testing.T) {
	m := &Mux{pending: map[int32]*pending{}}
	m.nextID = math.MaxInt32 - 1
	m.pending[1] = &pending{}
	m.pending[2] = &pending{}
	var got []int32
	for range 3 {
		id := m.newIDLocked()
		m.pending[id] = &pending{}
		got = append(got, id)
	}
	want := []int32{math.MaxInt32, 3, 4}
	if !slices.Equal(got, want) {
		t.Fatalf("ids %v; want %v", got, want)
	}
}

func TestOversizedUpstreamMessage(t *testing.T) {
	fb := newFakeBrowser(t)
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

func TestRefusals(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	tests := []struct {
		method, params string
	}{
		{"Browser.crash", ""},
		{"Browser.crashGpuProcess", ""},
		{"Target.disposeBrowserContext", `{"browserContextId":"CTX0"}`},
		{"Target.attachToBrowserTarget", ""},
		{"Target.exposeDevToolsProtocol", `{"targetId":"x"}`},
		{"Target.setRemoteLocations", `{"locations":[]}`},
		{"Target.sendMessageToTarget", `{"message":"{}"}`},
		{"Target.attachToTarget", `{"targetId":"x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			if _, ok := refusals[tt.method]; !ok {
				t.Fatalf("%s is not in the refusal table", tt.method)
			}
			r := c.call(tt.method, tt.params, "")
			if r.Error == nil || !strings.Contains(r.Error.Message, "refused by the mux") {
				t.Fatalf("%s = %+v; want a refusal", tt.method, r)
			}
			if n := len(fb.got(tt.method)); n != 0 {
				t.Fatalf("%s reached the browser", tt.method)
			}
		})
	}
}

func TestBrowserCloseClosesOnlyOwnTabs(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	ta := a.createTarget("about:blank")
	tb := b.createTarget("about:blank")
	r := a.call("Browser.close", "", "")
	if r.Error != nil || string(r.Result) != "{}" {
		t.Fatalf("Browser.close = %+v; want {}", r)
	}
	if len(fb.got("Browser.close")) != 0 {
		t.Fatal("Browser.close reached the browser")
	}
	testkit.WaitFor(t, 5*time.Second, "a's tab closed", func() bool { return !fb.hasTarget(ta) })
	if !fb.hasTarget(tb) {
		t.Fatal("b's tab was closed by a's Browser.close")
	}
}

func TestDownloads(t *testing.T) {
	fb := newFakeBrowser(t)
	dir := t.TempDir()
	m := startMux(t, fb, Config{DownloadDir: dir})
	testkit.WaitFor(t, 5*time.Second, "proactive setDownloadBehavior", func() bool { return len(fb.got("Browser.setDownloadBehavior")) == 1 })
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	ta := a.createTarget("about:blank")
	for _, c := range []*testClient{a, b} {
		r := c.call("Browser.setDownloadBehavior", `{"behavior":"deny","downloadPath":"/tmp/elsewhere<>","eventsEnabled":true}`, "")
		if r.Error != nil {
			t.Fatal(r.Error)
		}
	}
	got := fb.got("Browser.setDownloadBehavior")
	if len(got) != 3 {
		t.Fatalf("browser got %d setDownloadBehavior; want 3", len(got))
	}
	for _, g := range got {
		var p struct{ Behavior, DownloadPath string }
		json.Unmarshal(g.Params, &p)
		if p.DownloadPath != dir || p.Behavior != "allow" {
			t.Fatalf("setDownloadBehavior params %s; want downloadPath %q behavior allow", g.Params, dir)
		}
	}
	fb.send(`{"method":"Browser.downloadWillBegin","params":{"frameId":"` + ta + `","guid":"g1","url":"http://x/f","suggestedFilename":"f"}}`)
	fb.send(`{"method":"Browser.downloadProgress","params":{"guid":"g1","totalBytes":1,"receivedBytes":1,"state":"completed"}}`)
	testkit.WaitFor(t, 5*time.Second, "download events at the owner", func() bool {
		return len(a.events("Browser.downloadWillBegin")) == 1 && len(a.events("Browser.downloadProgress")) == 1
	})
	b.call("Browser.getVersion", "", "")
	if n := len(b.events("Browser.downloadWillBegin")) + len(b.events("Browser.downloadProgress")); n != 0 {
		t.Fatalf("b got %d download events of a's tab", n)
	}
	fb.drop()
	testkit.WaitFor(t, 5*time.Second, "setDownloadBehavior again after reconnect", func() bool { return len(fb.got("Browser.setDownloadBehavior")) == 4 })
}

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
	if n := len(fb.got("Target.setAutoAttach")); n != 0 {
		t.Fatalf("setAutoAttach reached the browser %d times", n)
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

func TestTakeover(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	old := newClient(t, m, "dup")
	tid := old.createTarget("about:blank")
	fresh := newClient(t, m, "dup")
	testkit.WaitFor(t, 5*time.Second, "old connection closed with 4409", func() bool {
		done, code := old.closed()
		return done && code == CloseTakenOver
	})
	if !slices.Contains(fresh.targetIDs(), tid) || !fb.hasTarget(tid) {
		t.Fatal("takeover lost the client's tab")
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

func TestUpstreamLossAndReconnect(t *testing.T) {
	fb := newFakeBrowser(t)
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

func TestUpstreamRelaunchHook(t *testing.T) {
	fb := newFakeBrowser(t)
	fb2 := newFakeBrowser(t)
	relaunched := make(chan struct{}, 1)
	m := startMux(t, fb, Config{ReconnectTries: 2, Hooks: Hooks{Relaunch: func(ctx context.Context) (string, error) {
		select {
		case relaunched <- struct{}{}:
		default:
		}
		return fb2.url(), nil
	}}})
	c := newClient(t, m, "c")
	c.createTarget("https://restored.example/")
	fb2.next = 100                                           // new browser, new target ids
	restored := fb2.addPage("https://restored.example/", "") // the relaunched browser restores the session
	fb.srv.Listener.Close()                                  // the old browser is gone for good
	fb.drop()
	testkit.WaitFor(t, 5*time.Second, "relaunch hook called and new browser connected", func() bool { return fb2.connections() == 1 && m.Stats().Upstream })
	testkit.WaitFor(t, 5*time.Second, "restored tab owned again", func() bool { return slices.Equal(c.targetIDs(), []string{restored}) })
}

func TestRelaunchedDialsAtOnce(t *testing.T) {
	fb := newFakeBrowser(t)
	fb2 := newFakeBrowser(t)
	// Backoff far beyond the test: only Relaunched can bring the upstream back in time.
	m := startMux(t, fb, Config{ReconnectMin: time.Hour, ReconnectMax: time.Hour})
	c := newClient(t, m, "c")
	c.createTarget("https://restored.example/")
	fb2.next = 100
	restored := fb2.addPage("https://restored.example/", "")
	orphan := fb2.addPage("https://nobody.example/", "") // restored, but its owner is not among the clients
	fb.srv.Listener.Close()
	fb.drop()
	testkit.WaitFor(t, 5*time.Second, "the loss noticed", func() bool { return !m.Stats().Upstream })
	m.Relaunched(fb2.url())
	testkit.WaitFor(t, 5*time.Second, "the relaunched browser connected", func() bool { return fb2.connections() == 1 && m.Stats().Upstream })
	testkit.WaitFor(t, 5*time.Second, "restored tab owned again", func() bool { return slices.Equal(c.targetIDs(), []string{restored}) })
	testkit.WaitFor(t, 5*time.Second, "the unclaimed restored tab closed", func() bool { return !fb2.hasTarget(orphan) })
	if !fb2.hasTarget(restored) {
		t.Fatal("the owned restored tab was closed")
	}
}

func TestSilentBrowserIsDropped(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{PingInterval: 50 * time.Millisecond, PongTimeout: 150 * time.Millisecond})
	c := newClient(t, m, "c")
	tid := c.createTarget("about:blank")
	sid := c.attach(tid)
	fb.setStall("Browser.getVersion", true) // the probe goes unanswered

	// Busy but alive: the browser keeps sending events, so it is never taken for hung.
	until := time.Now().Add(600 * time.Millisecond)
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

func TestAdoptOwnership(t *testing.T) {
	fb := newFakeBrowser(t)
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

func TestSlowClientDoesNotStallOthers(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{QueueBytes: 256 << 10, Grace: time.Minute})
	// The slow client is a raw TCP WebSocket that never reads.
	slowWS, _, err := dialMux(t, m, "/tok/client-slow", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slowWS.Close() })
	slowWS.NetConn().(*net.TCPConn).SetReadBuffer(4096)
	slowWS.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"method":"Target.createTarget","params":{"url":"about:blank"}}`))
	testkit.WaitFor(t, 5*time.Second, "slow client's tab", func() bool { return len(m.Ownership()["slow"]) == 2 })
	slowPage := m.Ownership()["slow"][1]
	slowWS.WriteMessage(websocket.TextMessage, []byte(`{"id":2,"method":"Target.attachToTarget","params":{"targetId":"`+slowPage+`","flatten":true}}`))
	var slowSess string
	testkit.WaitFor(t, 5*time.Second, "slow client's session", func() bool { slowSess = fb.sessionOf(slowPage); return slowSess != "" })

	fast := newClient(t, m, "fast")
	big := `{"method":"Network.dataReceived","params":{"data":"` + strings.Repeat("y", 64<<10) + `"},"sessionId":"` + slowSess + `"}`
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			fb.send(big)
		}
	}()
	t.Cleanup(func() { close(stop); wg.Wait() })
	for range 20 {
		start := time.Now()
		if r := fast.call("Browser.getVersion", "", ""); r.Error != nil {
			t.Fatal(r.Error)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Fatalf("fast client's call took %v while another client stalled", d)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "slow client disconnected on overflow, into its grace period", func() bool {
		for _, cs := range m.Stats().PerClient {
			if cs.ID == "slow" {
				return !cs.Connected && cs.Tabs == 1
			}
		}
		return false
	})
	if !fb.hasTarget(slowPage) {
		t.Fatal("overflow closed the slow client's tab")
	}
}

func TestStats(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "s")
	c.createTarget("about:blank")
	s := m.Stats()
	if s.Clients != 1 || !s.Upstream || s.MessagesIn < 1 || s.MessagesOut < 1 || s.BytesIn == 0 || len(s.PerClient) != 1 || s.PerClient[0].Tabs != 1 {
		t.Fatalf("Stats = %+v", s)
	}
	if s.IdleSeconds > 5 {
		t.Fatalf("IdleSeconds = %v right after activity", s.IdleSeconds)
	}
}

func TestPuppeteerTabTargets(t *testing.T) {
	fb := newFakeBrowser(t)
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

func TestCreateClaimsOnlyItsTargets(t *testing.T) {
	fb := newFakeBrowser(t)
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

func TestBigClientMessageReachesBrowser(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	expr := strings.Repeat("q", 1<<20)
	r := c.call("Runtime.evaluate", `{"expression":"`+expr+`"}`, "")
	if !strings.Contains(string(r.Result), expr) {
		t.Fatalf("1 MiB command mangled on its way (answer %d bytes)", len(r.Result))
	}
}

func TestKeepalive(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{PingInterval: 50 * time.Millisecond, PongTimeout: 500 * time.Millisecond, Grace: time.Minute})
	ws, _, err := dialMux(t, m, "/tok/client-live", nil)
	if err != nil {
		t.Fatal(err)
	}
	var pings atomic.Int32
	ws.SetPingHandler(func(data string) error {
		pings.Add(1)
		return ws.WriteControl(websocket.PongMessage, []byte(data), time.Now().Add(time.Second))
	})
	live := &testClient{t: t, ws: ws}
	t.Cleanup(func() { ws.Close() })
	go live.read()
	live.createTarget("about:blank")
	mute, _, err := dialMux(t, m, "/tok/client-mute", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	mute.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"method":"Target.createTarget","params":{"url":"about:blank"}}`))
	// mute never reads, so it never answers a ping: it is dropped into its grace period, tabs kept.
	testkit.WaitFor(t, 5*time.Second, "silent client dropped", func() bool {
		for _, cs := range m.Stats().PerClient {
			if cs.ID == "mute" {
				return !cs.Connected && cs.Tabs == 1
			}
		}
		return false
	})
	// The idle live client is pinged again and again, answers, and stays.
	testkit.WaitFor(t, 5*time.Second, "several pings answered", func() bool { return pings.Load() >= 4 })
	if done, _ := live.closed(); done {
		t.Fatal("client answering pings was dropped")
	}
	if r := live.call("Browser.getVersion", "", ""); r.Error != nil {
		t.Fatal(r.Error)
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

func TestSameClientIDsDoNotCollide(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	fb.setStall("Runtime.evaluate", true)
	ta, tb := a.createTarget("about:blank"), b.createTarget("about:blank")
	sa, sb := a.attach(ta), b.attach(tb)
	a.sendRaw(`{"id":1,"method":"Runtime.evaluate","params":{"expression":"\"from a\""},"sessionId":"` + sa + `"}`)
	b.sendRaw(`{"id":1,"method":"Runtime.evaluate","params":{"expression":"\"from b\""},"sessionId":"` + sb + `"}`)
	testkit.WaitFor(t, 5*time.Second, "both calls upstream", func() bool { return len(fb.got("Runtime.evaluate")) == 2 })
	got := fb.got("Runtime.evaluate")
	if string(got[0].ID) == string(got[1].ID) {
		t.Fatalf("both clients' id 1 reached the browser as %s", got[0].ID)
	}
	fb.setStall("Runtime.evaluate", false)
	for _, g := range got { // answer both, in the browser's order
		var p struct{ Expression string }
		json.Unmarshal(g.Params, &p)
		fb.send(`{"id":` + string(g.ID) + `,"result":{"value":"` + strings.Trim(p.Expression, `"`) + `"},"sessionId":"` + g.SessionID + `"}`)
	}
	if r := a.waitID("1"); !strings.Contains(string(r.Result), "from a") {
		t.Fatalf("a's id 1 got %s", r.Result)
	}
	if r := b.waitID("1"); !strings.Contains(string(r.Result), "from b") {
		t.Fatalf("b's id 1 got %s", r.Result)
	}
}

func TestTakeoverAllowedAtMaxClients(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{MaxClients: 1})
	old := newClient(t, m, "x")
	old.call("Browser.getVersion", "", "")
	newClient(t, m, "x") // the same id may always take its slot over
	testkit.WaitFor(t, 5*time.Second, "old closed with 4409", func() bool { d, code := old.closed(); return d && code == CloseTakenOver })
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

func TestForeignBrowserContextRefused(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	b := newClient(t, m, "b")
	ctxA := result[struct {
		BrowserContextID string `json:"browserContextId"`
	}](t, a.call("Target.createBrowserContext", "", "")).BrowserContextID
	for _, method := range []string{"Target.createTarget", "Target.disposeBrowserContext"} {
		if r := b.call(method, `{"url":"about:blank","browserContextId":"`+ctxA+`"}`, ""); r.Error == nil {
			t.Fatalf("b %s in a's context succeeded", method)
		}
	}
	if n := len(fb.got("Target.disposeBrowserContext")); n != 0 {
		t.Fatal("dispose of another client's context reached the browser")
	}
	if r := b.call("Target.getBrowserContexts", "", ""); strings.Contains(string(r.Result), ctxA) || !strings.Contains(string(r.Result), `"defaultBrowserContextId":"CTX0"`) {
		t.Fatalf("b's getBrowserContexts = %s; want a's context hidden", r.Result)
	}
	if r := a.call("Target.getBrowserContexts", "", ""); !strings.Contains(string(r.Result), ctxA) {
		t.Fatalf("a's getBrowserContexts = %s; want its context", r.Result)
	}
	if r := a.call("Target.disposeBrowserContext", `{"browserContextId":"`+ctxA+`"}`, ""); r.Error != nil {
		t.Fatalf("a disposing its own context: %+v", r.Error)
	}
}

func TestUpstreamFramesAndPings(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	r := c.call("Test.fragmented", "", "")
	want := strings.Repeat("f", 10000) + strings.Repeat("g", 10000)
	if !strings.Contains(string(r.Result), want) {
		t.Fatalf("fragmented answer mangled (%d bytes)", len(r.Result))
	}
	c.call("Test.ping", "", "")
	testkit.WaitFor(t, 5*time.Second, "pong to the browser's ping", func() bool {
		fb.mu.Lock()
		defer fb.mu.Unlock()
		return slices.Contains(fb.pongs, "hi")
	})
	if r := c.call("Browser.getVersion", "", ""); r.Error != nil {
		t.Fatal(r.Error)
	}
}
