package mux

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"vibebrowser/integration/testkit"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func contextWithCancel() (context.Context, context.CancelFunc) {
	return context.WithCancel(context.Background())
}

func TestHTTPChecks(t *testing.T) { forEachTransport(t, testHTTPChecks) }

func testHTTPChecks(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
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
		{name: "capability version", path: CapabilityPath("tok", "t1") + "/json/version", want: 200,
			body: `"webSocketDebuggerUrl": "ws://127.0.0.1:` + port + CapabilityPath("tok", "t1") + `"`},
		{name: "capability list", path: CapabilityPath("tok", "t1") + "/json/list", want: 200, body: "[]"},
		{name: "capability of another client", path: "/c/" + Capability("tok", "t2") + "/client-t1/json/version", want: 401},
		{name: "capability of another store", path: CapabilityPath("other", "t1") + "/json/version", want: 401},
		{name: "capability cut short", path: "/c/" + Capability("tok", "t1")[:16] + "/client-t1/json/version", want: 401},
		{name: "capability with the token", path: "/c/tok/client-t1/json/version", want: 401},
		{name: "capability origin", path: CapabilityPath("tok", "t1") + "/json/version", origin: "http://evil.example", want: 403},
		{name: "capability unknown", path: CapabilityPath("tok", "t1") + "/json/new", want: 404},
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
			if strings.Contains(string(b), fb.srv.Listener.Addr().String()) || strings.Contains(string(b), "secret") ||
				fb.kp != nil && strings.Contains(string(b), fb.kp.socket) {
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
		{name: "ws capability of another client", path: "/c/" + Capability("tok", "b") + "/client-a", want: 401},
		{name: "ws capability without client", path: "/c/" + Capability("tok", "a"), want: 401},
		{name: "ws capability of the human client", path: CapabilityPath("tok", HumanClient), want: 403},
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

// TestCapabilityURLIsItsClient: a client on its capability URL is that client, seeing its own tabs, as on
// the store token's /client-<id>.
func TestCapabilityURLIsItsClient(t *testing.T) {
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{})
	ws, _, err := dialMux(t, m, CapabilityPath("tok", "t1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	testkit.WaitFor(t, 5*time.Second, "the capability client connected", func() bool {
		s := m.Stats()
		return s.Clients == 1 && s.PerClient[0].ID == "t1"
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

func TestStats(t *testing.T) { forEachTransport(t, testStats) }

func testStats(t *testing.T, tr upTransport) {
	fb := newFakeBrowserOn(t, tr)
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

// TestServedOnTheCallersListener: with Config.Port the mux binds nothing; the caller's server hands it every
// request, and the caller's listener outlives the mux (the manager keeps a sleeping store's port bound).
func TestServedOnTheCallersListener(t *testing.T) {
	fb := newFakeBrowser(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Upstream: fb.url(), Token: "tok", Port: ln.Addr().(*net.TCPAddr).Port})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: m}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close(); <-served })
	ctx, cancel := contextWithCancel()
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	testkit.WaitFor(t, 20*time.Second, "mux connected to the browser", func() bool { return m.Stats().Upstream })

	if m.Addr() != ln.Addr().String() {
		t.Errorf("Addr() = %q; want the caller's %q", m.Addr(), ln.Addr())
	}
	if v := m.Version(); v["Browser"] != "FakeChrome/1.0" || v["webSocketDebuggerUrl"] != nil {
		t.Errorf("Version() = %v; want the browser's object without its own webSocketDebuggerUrl", v)
	}
	c := newClient(t, m, "a")
	c.createTarget("about:blank")
	c.ws.Close()

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	ws, resp, err := dialMux(t, m, "/tok/client-b", nil)
	if err == nil {
		ws.Close()
		t.Fatal("a mux that stopped serving upgraded a client")
	}
	if resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("dial after Serve ended = %v, %v; want 503 through the caller's listener, still bound", resp, err)
	}
}
