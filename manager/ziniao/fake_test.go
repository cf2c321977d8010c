package ziniao

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"
)

// fakeCDP is a browser's DevTools endpoint: /json/version, /json/list, PUT /json/new and one page websocket
// that answers Runtime.evaluate of navigator.webdriver.
type fakeCDP struct {
	srv       *httptest.Server
	alive     atomic.Bool // false: every HTTP route answers 503 (a dead port, as far as probes care)
	webdriver atomic.Bool // navigator.webdriver in the page
	pages     atomic.Int32
	created   atomic.Int32 // PUT /json/new calls
	wrongNew  atomic.Int32 // GET /json/new calls (refused, as Chromium ≥ 111 does)
}

func newFakeCDP(t *testing.T, pages int) *fakeCDP {
	t.Helper()
	f := &fakeCDP{}
	f.alive.Store(true)
	f.pages.Store(int32(pages))
	up := websocket.Upgrader{}
	mux := http.NewServeMux()
	page := func() map[string]string {
		return map[string]string{"type": "page", "webSocketDebuggerUrl": "ws://127.0.0.1:" + strconv.Itoa(f.port()) + "/devtools/page/1"}
	}
	mux.HandleFunc("/json/version", func(w http.ResponseWriter, r *http.Request) {
		if !f.alive.Load() {
			http.Error(w, "dead", http.StatusServiceUnavailable)
			return
		}
		json.NewEncoder(w).Encode(map[string]string{"Browser": "Fake/1", "webSocketDebuggerUrl": "ws://127.0.0.1:" + strconv.Itoa(f.port()) + "/devtools/browser/x"})
	})
	mux.HandleFunc("/json/list", func(w http.ResponseWriter, r *http.Request) {
		if !f.alive.Load() {
			http.Error(w, "dead", http.StatusServiceUnavailable)
			return
		}
		list := []map[string]string{{"type": "service_worker", "webSocketDebuggerUrl": "ws://127.0.0.1:1/devtools/page/sw"}}
		for range f.pages.Load() {
			list = append(list, page())
		}
		json.NewEncoder(w).Encode(list)
	})
	mux.HandleFunc("/json/new", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			f.wrongNew.Add(1)
			http.Error(w, "Using unsafe HTTP verb GET to invoke /json/new", http.StatusMethodNotAllowed)
			return
		}
		f.created.Add(1)
		f.pages.Add(1)
		json.NewEncoder(w).Encode(page())
	})
	mux.HandleFunc("/devtools/page/1", func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			_, msg, err := c.ReadMessage()
			if err != nil {
				return
			}
			var req struct {
				ID     int `json:"id"`
				Params struct {
					Expression string `json:"expression"`
				} `json:"params"`
			}
			json.Unmarshal(msg, &req)
			// An event first: the reader must skip it.
			c.WriteMessage(websocket.TextMessage, []byte(`{"method":"Runtime.executionContextCreated","params":{}}`))
			res := map[string]any{"type": "undefined"}
			if req.Params.Expression == "navigator.webdriver" {
				res = map[string]any{"type": "boolean", "value": f.webdriver.Load()}
			}
			c.WriteJSON(map[string]any{"id": req.ID, "result": map[string]any{"result": res}})
		}
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeCDP) port() int { return f.srv.Listener.Addr().(*net.TCPAddr).Port }

// fakeAPI is a Ziniao client's local HTTP API whose answers a test scripts per request.
type fakeAPI struct {
	srv *httptest.Server

	mu     sync.Mutex // mu guards the fields below
	bodies []map[string]any
	answer func(n int, body map[string]any) (status int, resp any) // n counts requests from 0
}

func newFakeAPI(t *testing.T, answer func(n int, body map[string]any) (int, any)) *fakeAPI {
	t.Helper()
	f := &fakeAPI{answer: answer}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		if r.Method != http.MethodPost || r.URL.Path != "/" || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("request %s %s (Content-Type %q); want POST / application/json", r.Method, r.URL.Path, r.Header.Get("Content-Type"))
		}
		d := json.NewDecoder(r.Body)
		d.UseNumber()
		if err := d.Decode(&body); err != nil {
			t.Errorf("request body: %v", err)
		}
		f.mu.Lock()
		n := len(f.bodies)
		f.bodies = append(f.bodies, body)
		answer := f.answer
		f.mu.Unlock()
		status, resp := answer(n, body)
		if status != http.StatusOK {
			w.WriteHeader(status)
		}
		if s, ok := resp.(string); ok {
			w.Write([]byte(s))
			return
		}
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// client returns a Client of the fake with a test account.
func (f *fakeAPI) client() *Client {
	return &Client{
		Port:    f.srv.Listener.Addr().(*net.TCPAddr).Port,
		Account: Account{Company: "acme", Username: "ops", Password: "s3cret"},
	}
}

// actions lists the action of every request so far, in order.
func (f *fakeAPI) actions() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, b := range f.bodies {
		a, _ := b["action"].(string)
		out = append(out, a)
	}
	return out
}

func (f *fakeAPI) body(i int) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bodies[i]
}

// ok is a success answer with extra fields.
func ok(extra map[string]any) map[string]any {
	m := map[string]any{"statusCode": "0"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// deadPort returns a port nothing listens on.
func deadPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}
