package browsers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/mux/errdefs"
)

// These tests drive a store's endpoint front over real HTTP and WebSockets, with the fake backend behind it:
// what it answers while the browser sleeps, and when it wakes it.

// boundStore adds a store and binds its endpoint, as store add does; it returns the Spec and the endpoint's
// address "127.0.0.1:PORT".
func boundStore(t *testing.T, f *Fleet, name string) (Spec, string) {
	t.Helper()
	sp := fakeStore(t, f, name)
	if err := f.Bind(context.Background(), sp); err != nil {
		t.Fatal(err)
	}
	return sp, "127.0.0.1:" + strconv.Itoa(f.Port(sp.Key))
}

// get fetches url and returns its status and body.
func get(t *testing.T, url string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// dial opens a WebSocket to url; on a refusal it returns the status and body of the answer instead.
func dial(t *testing.T, url string, header http.Header) (*websocket.Conn, int, string) {
	t.Helper()
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
	ws, resp, err := d.Dial(url, header)
	if err == nil {
		t.Cleanup(func() { ws.Close() })
		return ws, http.StatusSwitchingProtocols, ""
	}
	if resp == nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return nil, resp.StatusCode, string(b)
}

// call sends one CDP command on ws and waits for its answer.
func call(t *testing.T, ws *websocket.Conn, method string) json.RawMessage {
	t.Helper()
	ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"id":7,"method":"`+method+`"}`)); err != nil {
		t.Fatal(err)
	}
	for {
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(b, &msg) == nil && msg.ID == 7 {
			return msg.Result
		}
	}
}

func TestEndpointRefusesBeforeStarting(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp, addr := boundStore(t, f, "Shop")
	tests := []struct {
		name   string
		ws     bool
		path   string
		header http.Header
		want   int
	}{
		{name: "version with a wrong token", path: "/nope/json/version", want: http.StatusUnauthorized},
		{name: "client with a wrong token", ws: true, path: "/nope/client-a", want: http.StatusUnauthorized},
		{name: "client with no token", ws: true, path: "/client-a", want: http.StatusUnauthorized},
		{name: "client from a web page", ws: true, path: "/" + sp.Token + "/client-a",
			header: http.Header{"Origin": {"http://evil.example"}}, want: http.StatusForbidden},
		{name: "version through a foreign host name", path: "/" + sp.Token + "/json/version",
			header: http.Header{"Host": {"evil.example"}}, want: http.StatusForbidden},
		{name: "a bad client id", ws: true, path: "/" + sp.Token + "/client-a.b", want: http.StatusBadRequest},
		{name: "the people's client id", ws: true, path: "/" + sp.Token + "/client-human", want: http.StatusForbidden},
		{name: "plain HTTP to a client path", path: "/" + sp.Token + "/client-a", want: http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got int
			if tt.ws {
				_, got, _ = dial(t, "ws://"+addr+tt.path, tt.header)
			} else if host := tt.header.Get("Host"); host != "" {
				req, _ := http.NewRequest("GET", "http://"+addr+tt.path, nil)
				req.Host = host
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				got = resp.StatusCode
			} else {
				got, _ = get(t, "http://"+addr+tt.path, tt.header)
			}
			if got != tt.want {
				t.Errorf("%s = %d; want %d", tt.path, got, tt.want)
			}
			if fb.launches() != 0 {
				t.Fatalf("%s started a browser; want nothing started", tt.path)
			}
		})
	}
}

func TestEndpointDiscoveryOfASleepingBrowser(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp, addr := boundStore(t, f, "Shop")
	base := "http://" + addr + "/" + sp.Token
	if code, body := get(t, base+"/json/list", nil); code != 200 || strings.TrimSpace(body) != "[]" || fb.launches() != 0 {
		t.Fatalf("/json/list of a store never started = %d %s, %d launches; want [] and nothing started", code, body, fb.launches())
	}
	// No version was ever seen: the probe starts the browser to answer.
	code, body := get(t, base+"/json/version/", nil)
	if code != 200 || !strings.Contains(body, "FakeChrome/1.0") || fb.launches() != 1 {
		t.Fatalf("first /json/version = %d %s after %d launches; want the browser started and its version", code, body, fb.launches())
	}
	// What a stop keeps is what the mux knows then (a browser reached over ws:// reports its version only
	// once connected), not what was saved at the start.
	if err := f.db.Browsers().SaveVersion(context.Background(), sp.Key, json.RawMessage(`{"Browser":"Stale/0"}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.Stop(context.Background(), sp.Key); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/json/version", "/json/version/", "/json/list"} {
		code, body := get(t, base+path, nil)
		if code != 200 || fb.launches() != 1 || f.slot(sp.Key).current() != nil {
			t.Fatalf("%s of a stopped browser = %d %s, %d launches; want an answer and nothing started", path, code, body, fb.launches())
		}
		if path == "/json/list" {
			continue
		}
		var v map[string]string
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		if v["Browser"] != "FakeChrome/1.0" || !strings.HasPrefix(v["webSocketDebuggerUrl"], "ws://"+addr+"/"+sp.Token+"/devtools/browser/") {
			t.Errorf("%s of a stopped browser = %v; want the last version, its WebSocket on this endpoint", path, v)
		}
	}
}

func TestEndpointWakesTheBrowserForAClient(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp, addr := boundStore(t, f, "Shop")
	for round := range 2 { // a store never started, then a stopped one
		ws, code, body := dial(t, "ws://"+addr+"/"+sp.Token+"/client-agent", nil)
		if ws == nil {
			t.Fatalf("round %d: dial = %d %s; want the browser started and the upgrade", round, code, body)
		}
		if res := call(t, ws, "Target.getTargets"); !strings.Contains(string(res), "targetInfos") {
			t.Errorf("round %d: Target.getTargets through the woken mux = %s", round, res)
		}
		if fb.launches() != round+1 {
			t.Errorf("round %d: %d launches; want %d", round, fb.launches(), round+1)
		}
		ws.Close()
		if err := f.Stop(context.Background(), sp.Key); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEndpointConcurrentClientsStartOneBrowser(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp, addr := boundStore(t, f, "Shop")
	const n = 6
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			d := websocket.Dialer{HandshakeTimeout: 10 * time.Second}
			ws, resp, err := d.Dial("ws://"+addr+"/"+sp.Token+"/client-c"+strconv.Itoa(i), nil)
			if err == nil {
				codes[i] = http.StatusSwitchingProtocols
				ws.Close()
			} else if resp != nil {
				codes[i] = resp.StatusCode
			}
		})
	}
	wg.Wait()
	for i, code := range codes {
		if code != http.StatusSwitchingProtocols {
			t.Errorf("client %d = %d; want upgraded", i, code)
		}
	}
	if fb.launches() != 1 {
		t.Errorf("%d clients at once on a stopped store launched %d browsers; want 1", n, fb.launches())
	}
}

func TestEndpointAnswersStartRefusalsBeforeTheUpgrade(t *testing.T) {
	f, fb := fakeFleet(t, func(c *Config) { c.RelaunchMax = 1 })
	sp, addr := boundStore(t, f, "Shop")
	fb.failNext = 2
	// The first start fails, the one relaunch of the window fails, the next is refused without a launch.
	for i, want := range []struct {
		status int
		code   string
	}{{http.StatusBadGateway, api.CodeStartFailed}, {http.StatusBadGateway, api.CodeStartFailed},
		{http.StatusTooManyRequests, api.CodeRelaunchBudget}} {
		ws, status, body := dial(t, "ws://"+addr+"/"+sp.Token, nil)
		if ws != nil {
			t.Fatalf("dial #%d upgraded; want %d", i+1, want.status)
		}
		var e api.Error
		if err := json.Unmarshal([]byte(body), &e); err != nil || status != want.status || e.Code != want.code {
			t.Fatalf("dial #%d = %d %s; want %d with code %s", i+1, status, body, want.status, want.code)
		}
		if want.code == api.CodeRelaunchBudget && !strings.Contains(e.Message, "vibe-browser browser start "+sp.Slug) {
			t.Errorf("the budget refusal %q does not say what to do", e.Message)
		}
	}
	if fb.launches() != 0 || fb.failNext != 0 {
		t.Errorf("launches %d, failures left %d; want two failed attempts and no third", fb.launches(), fb.failNext)
	}
	f.BeginQuit()
	if _, status, _ := dial(t, "ws://"+addr+"/"+sp.Token, nil); status != http.StatusServiceUnavailable {
		t.Errorf("dial while the manager quits = %d; want 503", status)
	}
}

func TestEndpointLetsTheIdleSweepStopItsBrowser(t *testing.T) {
	f, fb := fakeFleet(t, func(c *Config) { c.Idle = time.Second })
	sp, addr := boundStore(t, f, "Shop")
	ws, code, body := dial(t, "ws://"+addr+"/"+sp.Token+"/client-agent", nil)
	if ws == nil {
		t.Fatalf("dial = %d %s", code, body)
	}
	s := f.slot(sp.Key)
	in := s.current()
	ws.Close()
	in.lastEnsure.Store(0) // the endpoint's ensure counts as activity like a shim's; let only the mux decide
	testkit.WaitFor(t, 10*time.Second, "the browser to be idle", func() bool { return f.busyReason(in) == "" })
	f.StopIdle(context.Background(), nil)
	if s.current() != nil {
		t.Fatal("the idle sweep kept a browser whose endpoint has no client")
	}
	if code, _ := get(t, "http://"+addr+"/"+sp.Token+"/json/version", nil); code != 200 || fb.launches() != 1 {
		t.Errorf("/json/version after the idle stop = %d, %d launches; want an answer from state, nothing started", code, fb.launches())
	}
}

func TestRemovedStoreReleasesItsEndpoint(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp, addr := boundStore(t, f, "Gone")
	if ws, code, body := dial(t, "ws://"+addr+"/"+sp.Token+"/client-agent", nil); ws == nil {
		t.Fatalf("dial the endpoint store add printed = %d %s; want the browser started", code, body)
	}
	s := f.slot(sp.Key)
	if err := f.Remove(context.Background(), sp.Key, func(ctx context.Context) error { return f.db.DeleteStore(ctx, sp.Key) }); err != nil {
		t.Fatal(err)
	}
	// A client of the front that waited for the store's lock while it was removed holds the old slot.
	if _, err := f.ensureIn(context.Background(), s, func(context.Context) (Spec, error) { return sp, nil }); !errors.Is(err, errdefs.ErrNotFound) || fb.launches() != 1 {
		t.Errorf("ensure in the removed store's slot = %v after %d launches; want ErrNotFound and nothing started", err, fb.launches())
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("port %s still answers after the store was removed", addr)
	}
	if _, err := f.db.Ports().Lookup(context.Background(), sp.Key); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("the registry still holds the removed store's port: %v", err)
	}
	if !fb.last().stopped.Load() {
		t.Error("the removed store's browser was not stopped")
	}
	if f.Port(sp.Key) != 0 {
		t.Error("the removed store still has an endpoint")
	}
}

func TestBootBindsTheWebBrowsersEndpointToo(t *testing.T) {
	f, fb := fakeFleet(t, nil)
	sp, _ := boundStore(t, f, "Shop")
	if err := f.Stop(context.Background(), sp.Key); err != nil {
		t.Fatal(err)
	}
	if err := f.Boot(context.Background()); err != nil {
		t.Fatal(err)
	}
	web, err := f.WebSpec(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	port := f.Port(api.WebKey)
	if port == 0 {
		t.Fatal("boot bound no endpoint for the web browser")
	}
	if f.Current(api.WebKey) != nil || fb.launches() != 0 {
		t.Fatal("boot started the web browser; want its endpoint bound while it sleeps")
	}
	ws, code, body := dial(t, "ws://127.0.0.1:"+strconv.Itoa(port)+"/"+web.Token+"/client-web", nil)
	if ws == nil || fb.launches() != 1 || f.Current(api.WebKey) == nil {
		t.Fatalf("a client of the sleeping web browser = %d %s, %d launches; want it started and upgraded", code, body, fb.launches())
	}
}
