package mux

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

func TestIsolation(t *testing.T) { forEachTransport(t, testIsolation) }

func testIsolation(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
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
			if _, ok := lookupRoute(tt.method); !ok {
				t.Fatalf("%s is not in the table of methods", tt.method)
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

func TestBrowserCloseClosesOnlyOwnTabs(t *testing.T) {
	forEachTransport(t, testBrowserCloseClosesOnlyOwnTabs)
}

func testBrowserCloseClosesOnlyOwnTabs(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
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
