package mux

import (
	"context"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

func TestWebURL(t *testing.T) {
	tests := []struct {
		url  string
		want bool
	}{
		{"", true},
		{"about:blank", true},
		{"ABOUT:blank", true},
		{"about:blank#frag", true},
		{"about:srcdoc", true},
		{"http://example.com/", true},
		{"HTTPS://example.com/a?b#c", true},
		{"data:text/html,<p>hi</p>", true},
		{"blob:https://example.com/7b3a", true},
		{"blob:null/7b3a", true},
		{"  https://example.com/  ", true},
		{"chrome://inspect/#pages", false},
		{"CHROME://inspect", false},
		{"ChRoMe://history", false},
		{"chr\tome://inspect", false},
		{"\x00chrome://version", false},
		{" \nchrome://downloads", false},
		{"chrome-untrusted://terminal/", false},
		{"devtools://devtools/bundled/inspector.html", false},
		{"chrome-extension://abcdef/page.html", false},
		{"view-source:https://example.com/", false},
		{"view-source:chrome://settings", false},
		{"file:///etc/hostname", false},
		{"FILE:///etc/hostname", false},
		{"file:///tmp/../etc/passwd", false},
		{"file://localhost/etc/passwd", false},
		{"filesystem:https://example.com/temporary/x", false},
		{"blob:chrome://settings/7b3a", false},
		{"blob:file:///7b3a", false},
		{"about:version", false},
		{"about:", false},
		{"about:Blank", false},
		{"javascript:alert(1)", false},
		{"example.com", false},
		{"//example.com/", false},
		{"1http://x", false},
	}
	for _, tt := range tests {
		if got := webURL(tt.url); got != tt.want {
			t.Errorf("webURL(%q) = %v; want %v", tt.url, got, tt.want)
		}
	}
	if !landedURL("chrome-error://chromewebdata/") {
		t.Error(`landedURL("chrome-error://chromewebdata/") = false; want true (a failed load's error page)`)
	}
	if landedURL("chrome://inspect") {
		t.Error(`landedURL("chrome://inspect") = true; want false`)
	}
}

// Every entry of the table says why: a refusal its rule, a judge the rule it refuses by.
func TestMethodTableReasons(t *testing.T) {
	for method, r := range methodRoutes {
		if r.check != nil && r.reason == "" && r.where != onAny {
			t.Errorf("methodRoutes[%q] judges but names no rule", method)
		}
		if r.refuse != "" && r.check != nil {
			t.Errorf("methodRoutes[%q] both refuses and judges", method)
		}
	}
}

func TestBrowserPagesRefused(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	tid := c.createTarget("about:blank")
	sid := c.attach(tid)
	tests := []struct {
		method, params, session string
	}{
		{"Target.createTarget", `{"url":"chrome://inspect/#pages"}`, ""},
		{"Target.createTarget", `{"url":"devtools://devtools/bundled/inspector.html"}`, ""},
		{"Target.createTarget", `{"url":"file:///etc/hostname"}`, ""},
		{"Page.navigate", `{"url":"chrome://history"}`, sid},
		{"Page.navigate", `{"url":"view-source:chrome://downloads","frameId":"F2"}`, sid},
		{"Network.loadNetworkResource", `{"url":"file:///etc/hostname","frameId":"F1","options":{}}`, sid},
		{"Fetch.continueRequest", `{"requestId":"r1","url":"file:///etc/hostname"}`, sid},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.params, func(t *testing.T) {
			before := len(fb.got(tt.method))
			r := c.call(tt.method, tt.params, tt.session)
			if r.Error == nil || !strings.Contains(r.Error.Message, "refused by the mux") || !strings.Contains(r.Error.Message, urlRule) {
				t.Fatalf("%s %s = %+v; want a refusal naming the URL rule", tt.method, tt.params, r)
			}
			if n := len(fb.got(tt.method)); n != before {
				t.Fatalf("%s reached the browser", tt.method)
			}
		})
	}
	if r := c.call("Page.navigate", `{"url":"https://example.com/ok"}`, sid); r.Error != nil {
		t.Fatalf("Page.navigate to a web page: %+v", r.Error)
	}
}

func TestHistoryEntryChecked(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	tid := c.createTarget("https://example.com/one")
	sid := c.attach(tid)
	// The page's history holds a browser page (as if it got there some way the mux did not see).
	fb.mu.Lock()
	ft := fb.targets[tid]
	ft.History, ft.Index = []string{"chrome://inspect/#pages", "https://example.com/one"}, 1
	fb.mu.Unlock()
	r := c.call("Page.navigateToHistoryEntry", `{"entryId":1}`, sid)
	if r.Error == nil || !strings.Contains(r.Error.Message, "chrome://inspect/#pages") {
		t.Fatalf("navigateToHistoryEntry to chrome://inspect = %+v; want a refusal naming the URL", r)
	}
	if len(fb.got("Page.navigateToHistoryEntry")) != 0 {
		t.Fatal("the refused history navigation reached the browser")
	}
	if r := c.call("Page.navigateToHistoryEntry", `{"entryId":2}`, sid); r.Error != nil {
		t.Fatalf("navigateToHistoryEntry to a web page: %+v", r.Error)
	}
}

func TestStrayTargetClosed(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	c.call("Target.setDiscoverTargets", `{"discover":true}`, "")
	bad := c.createTarget("https://example.com/")
	failed := c.createTarget("https://example.com/")
	setURL := func(id, url string) {
		fb.mu.Lock()
		fb.setURLLocked(fb.targets[id], url)
		fb.mu.Unlock()
	}
	setURL(failed, "chrome-error://chromewebdata/")
	setURL(bad, "chrome://inspect/#pages")
	testkit.WaitFor(t, 5*time.Second, "the tab at chrome://inspect closed", func() bool { return !fb.hasTarget(bad) })
	if !fb.hasTarget(failed) {
		t.Fatal("a tab showing Chrome's error page was closed")
	}
	for _, ev := range c.events("Target.targetInfoChanged") {
		if strings.Contains(string(ev.Params), "chrome://inspect") {
			t.Fatalf("the client was told of its tab at chrome://inspect: %s", ev.Params)
		}
	}
}

// The operator is not a client: a person's human tab opens browser pages. An agent's tab, even in a
// person's hands, does not: the page would be the agent's when they let go.
func TestOperatorBrowserPages(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	c := newClient(t, m, "c")
	agentTab := c.createTarget("https://example.com/")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	h, err := m.op.NewHumanTab(ctx, "chrome://version")
	if err != nil {
		t.Fatalf("NewHumanTab(chrome://version): %v", err)
	}
	hv, err := m.op.View(ctx, h, ViewOptions{})
	if err != nil {
		t.Fatalf("View(human tab): %v", err)
	}
	defer hv.Close()
	if err := hv.Navigate(ctx, "chrome://settings"); err != nil {
		t.Fatalf("human tab Navigate(chrome://settings): %v", err)
	}
	av, err := m.op.View(ctx, agentTab, ViewOptions{})
	if err != nil {
		t.Fatalf("View(agent's tab): %v", err)
	}
	defer av.Close()
	if err := av.Navigate(ctx, "chrome://inspect"); err == nil || !strings.Contains(err.Error(), "human tab") {
		t.Fatalf("agent's tab Navigate(chrome://inspect) = %v; want a refusal saying to use a human tab", err)
	}
	// The backstop leaves the human tab alone: it is still there after its URL events went by.
	c.createTarget("about:blank") // a round trip through the mux after those events
	if !fb.hasTarget(h) {
		t.Fatal("the human tab at chrome://settings was closed")
	}
}
