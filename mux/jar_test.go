package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

// TestJarChromium: on a real Chromium, the launch hook's cookies are in the browser before a client's first
// command (the client's commands wait at the gate while the hook runs); the operator reads the whole jar,
// HttpOnly and partitioned cookies included, and a client sees nothing of those reads and writes; the
// count of what may have changed the jar moves with a client's page command and a navigation, never with
// the operator's own calls or while nothing happens.
func TestJarChromium(t *testing.T) {
	endpoint := startChromium(t)
	var m *Mux
	hookDone := make(chan time.Time, 1)
	cfg := Config{Upstream: endpoint, FreshLaunch: true}
	cfg.Hooks.Launched = func(ctx context.Context) {
		time.Sleep(300 * time.Millisecond) // a slow restore: the client's first command must wait for it
		err := m.op.SetCookies(ctx, json.RawMessage(`[
			{"name":"sid","value":"restored-login","url":"http://127.0.0.1/","httpOnly":true},
			{"name":"part","value":"p1","url":"https://shop.example/","secure":true,"sameSite":"None",
			 "partitionKey":{"topLevelSite":"https://top.example","hasCrossSiteAncestor":false}}]`))
		if err != nil {
			t.Errorf("SetCookies in the launch hook: %v", err)
		}
		hookDone <- time.Now()
	}
	m = runMux(t, nil, cfg)
	testkit.WaitFor(t, 10*time.Second, "mux connected", func() bool { return m.Stats().Upstream })
	c := newClient(t, m, "agent")
	page := c.createTarget("about:blank")
	answered := time.Now()
	select {
	case at := <-hookDone:
		if answered.Before(at) {
			t.Errorf("the client's first command was answered %v before the launch hook returned", at.Sub(answered))
		}
	default:
		t.Fatal("the client's first command was answered while the launch hook ran")
	}
	sess := c.attach(page)
	r := result[struct {
		Cookies []struct{ Name, Value string }
	}](t, c.call("Network.getCookies", `{"urls":["http://127.0.0.1/"]}`, sess))
	if len(r.Cookies) != 1 || r.Cookies[0].Value != "restored-login" {
		t.Errorf("the client's first read of the jar = %+v; want the launch hook's sid=restored-login", r.Cookies)
	}

	ctx := testCtx(t)
	testkit.WaitFor(t, 10*time.Second, "the announcements of the client's page to end", func() bool {
		gen := m.taps.JarChanges()
		time.Sleep(700 * time.Millisecond)
		return m.taps.JarChanges() == gen
	})
	before, gen := len(c.all()), m.taps.JarChanges()
	jar, err := m.op.Cookies(ctx)
	if err != nil {
		t.Fatalf("Cookies: %v", err)
	}
	var cookies []struct {
		Name         string
		HTTPOnly     bool `json:"httpOnly"`
		PartitionKey json.RawMessage
	}
	if err := json.Unmarshal(jar, &cookies); err != nil {
		t.Fatalf("Cookies = %s: %v", jar, err)
	}
	got := map[string]bool{}
	for _, ck := range cookies {
		got[ck.Name] = ck.Name == "sid" && ck.HTTPOnly || ck.Name == "part" && len(ck.PartitionKey) > 0
	}
	if !got["sid"] || !got["part"] {
		t.Errorf("Cookies = %s; want the HttpOnly sid and the partitioned part", jar)
	}
	if err := m.op.SetCookies(ctx, json.RawMessage(`[{"name":"more","value":"1","url":"http://127.0.0.1/"}]`)); err != nil {
		t.Fatalf("SetCookies: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // anything the browser would have sent the client meanwhile
	if extra := c.all()[before:]; len(extra) != 0 {
		t.Errorf("the client got %d messages while the operator read and set the jar: %s", len(extra), extra)
	}
	if now := m.taps.JarChanges(); now != gen {
		t.Errorf("JarChanges moved from %d to %d with the operator's own calls; want it still", gen, now)
	}

	scripts := m.taps.JarScripts()
	c.call("Runtime.evaluate", `{"expression":"document.cookie='js=1'"}`, sess)
	if now := m.taps.JarScripts(); now == scripts {
		t.Errorf("JarScripts = %d after a client's script on its page; want it moved", now)
	}
	c.call("Network.setCookie", `{"name":"n","value":"1","url":"http://127.0.0.1/"}`, sess)
	if now := m.taps.JarChanges(); now == gen {
		t.Errorf("JarChanges = %d after a client's Network.setCookie; want it moved", now)
	}
	gen = m.taps.JarChanges()
	c.call("Page.navigate", `{"url":"data:text/html,<title>x</title>"}`, sess)
	testkit.WaitFor(t, 5*time.Second, "the navigation counted", func() bool { return m.taps.JarChanges() > gen })
	// The navigation's last announcements come in their own time (later on a loaded machine): once the counts
	// have stood still for a while, nothing more of it is to come.
	testkit.WaitFor(t, 15*time.Second, "the navigation's announcements to end", func() bool {
		gen, scripts = m.taps.JarChanges(), m.taps.JarScripts()
		time.Sleep(700 * time.Millisecond)
		return m.taps.JarChanges() == gen && m.taps.JarScripts() == scripts
	})
	time.Sleep(time.Second)
	if now, nowScripts := m.taps.JarChanges(), m.taps.JarScripts(); now != gen || nowScripts != scripts {
		t.Errorf("JarChanges, JarScripts moved from %d, %d to %d, %d while nothing happened", gen, scripts, now, nowScripts)
	}

	// A fetch whose answer sets a cookie, seen by a client's Network domain, is a change; one that sets
	// none is not.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/set" {
			http.SetCookie(w, &http.Cookie{Name: "rotated", Value: "r2", Path: "/"})
		}
		w.Write([]byte("<title>site</title>"))
	}))
	defer srv.Close()
	c.call("Page.navigate", fmt.Sprintf(`{"url":%q}`, srv.URL+"/"), sess)
	c.call("Network.enable", "", sess)
	time.Sleep(500 * time.Millisecond)
	for _, tt := range []struct {
		path string
		want bool
	}{{"/plain", false}, {"/set", true}} {
		gen := m.taps.JarChanges()
		result[json.RawMessage](t, c.call("Runtime.evaluate", fmt.Sprintf(`{"expression":"fetch('%s').then(r => r.text())","awaitPromise":true}`, tt.path), sess))
		time.Sleep(300 * time.Millisecond) // the response's extra info
		if moved := m.taps.JarChanges() != gen; moved != tt.want {
			t.Errorf("fetch(%s): JarChanges moved %v; want %v", tt.path, moved, tt.want)
		}
	}
}

// TestJarCommandSignals: which clients' commands may change the jar, directly or through a script.
func TestJarCommandSignals(t *testing.T) {
	tests := []struct {
		method, session string
		change, script  bool
	}{
		{"Runtime.evaluate", "S1", false, true},
		{"Input.dispatchMouseEvent", "S1", false, true},
		{"Network.setCookie", "S1", true, false},
		{"Network.setCookies", "", true, false},
		{"Network.getCookies", "S1", false, true},
		{"Network.deleteCookies", "S1", true, false},
		{"Network.clearBrowserCookies", "", true, false},
		{"Storage.setCookies", "", true, false},
		{"Storage.getCookies", "", false, false},
		{"Storage.clearDataForOrigin", "", true, false},
		{"Target.getTargets", "", false, false},
		{"Target.createTarget", "", false, false}, // its page counts when Chrome announces it
	}
	for _, tt := range tests {
		var tp Taps
		tp.countJarCommand(tt.method, tt.session)
		if change, script := tp.JarChanges() == 1, tp.JarScripts() == 1; change != tt.change || script != tt.script {
			t.Errorf("countJarCommand(%q, %q): change %v, script %v; want %v, %v", tt.method, tt.session, change, script, tt.change, tt.script)
		}
	}
	if !strings.HasPrefix(string(setCookieHeaders[0]), `"`) {
		t.Error("the Set-Cookie needles must match a JSON key")
	}
}

// TestJarChangesAtTakeoverEnd: what a person typed in a tab they held may have logged the store in: the end
// of the hold counts.
func TestJarChangesAtTakeoverEnd(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	a := newClient(t, m, "a")
	pa := a.createTarget("https://a.example/")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := m.op.View(ctx, pa, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if err := v.Hold("alice"); err != nil {
		t.Fatal(err)
	}
	held := m.taps.JarChanges()
	v.Release()
	if got := m.taps.JarChanges(); got != held+1 {
		t.Errorf("JarChanges = %d after the hold ended; want %d", got, held+1)
	}
}
