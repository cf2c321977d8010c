package cdpwire

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// versionServer serves body with status at path and records the paths it was asked for.
func versionServer(t *testing.T, path string, status int, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestFetchVersion(t *testing.T) {
	const good = `{"Browser":"Chrome/140.0","Protocol-Version":"1.3","webSocketDebuggerUrl":"ws://127.0.0.1:1/devtools/browser/x"}`
	tests := []struct {
		name    string
		path    string // where the server answers
		base    string // appended to the server's URL
		status  int
		body    string
		wantErr string // empty: success
	}{
		{name: "bare", path: "/json/version", status: 200, body: good},
		{name: "trailing slash", path: "/json/version", base: "/", status: 200, body: good},
		{name: "path prefix", path: "/fleet/b1/json/version", base: "/fleet/b1/", status: 200, body: good},
		{name: "not found", path: "/elsewhere", status: 200, body: good, wantErr: "/json/version: 404 Not Found"},
		{name: "server error", path: "/json/version", status: 500, body: good, wantErr: "500 Internal Server Error"},
		{name: "no websocket", path: "/json/version", status: 200, body: `{"Browser":"Chrome/140.0"}`, wantErr: "no webSocketDebuggerUrl"},
		{name: "websocket not a string", path: "/json/version", status: 200, body: `{"webSocketDebuggerUrl":7}`, wantErr: "no webSocketDebuggerUrl"},
		{name: "not json", path: "/json/version", status: 200, body: `<html>`, wantErr: "invalid character"},
		{name: "over 1 MiB", path: "/json/version", status: 200, body: `{"Browser":"` + strings.Repeat("x", 1<<20) + `"}`, wantErr: "unexpected EOF"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := versionServer(t, tt.path, tt.status, tt.body)
			v, err := FetchVersion(context.Background(), srv.URL+tt.base)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), srv.URL) {
					t.Fatalf("FetchVersion(%q) = %+v, %v; want an error naming the URL and %q", srv.URL+tt.base, v, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("FetchVersion(%q): %v", srv.URL+tt.base, err)
			}
			if v.Browser != "Chrome/140.0" || v.WebSocketDebuggerURL != "ws://127.0.0.1:1/devtools/browser/x" || v.Raw["Protocol-Version"] != "1.3" {
				t.Errorf("FetchVersion(%q) = %+v; want Chrome/140.0, its websocket and the raw object", srv.URL+tt.base, v)
			}
		})
	}
}

func TestFetchVersionStatusError(t *testing.T) {
	srv := versionServer(t, "/elsewhere", 200, "")
	_, err := FetchVersion(context.Background(), srv.URL)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusNotFound || se.URL != srv.URL+"/json/version" {
		t.Fatalf("FetchVersion(%q) = %v; want a *StatusError 404 for %s/json/version", srv.URL, err, srv.URL)
	}
}

func TestFetchVersionNotAnswering(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	ln.Close()
	if _, err := FetchVersion(context.Background(), base); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("FetchVersion(%q) = %v; want connection refused", base, err)
	}
}

func TestFetchVersionBoundedByCtx(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := FetchVersion(ctx, srv.URL); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("FetchVersion(hanging server) = %v; want context.DeadlineExceeded", err)
	}
}

func TestGetJSONMethod(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut || r.URL.Path != "/json/new" || r.URL.RawQuery != "about:blank" {
			http.Error(w, "want PUT /json/new?about:blank", http.StatusMethodNotAllowed)
			return
		}
		w.Write([]byte(`{"type":"page","webSocketDebuggerUrl":"ws://h/devtools/page/1"}`))
	}))
	t.Cleanup(srv.Close)
	var got struct {
		Type string `json:"type"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	if err := GetJSON(context.Background(), http.MethodPut, srv.URL+"/json/new?about:blank", &got); err != nil || got.Type != "page" || got.WS != "ws://h/devtools/page/1" {
		t.Fatalf("GetJSON(PUT /json/new) = %+v, %v; want the page target", got, err)
	}
	err := GetJSON(context.Background(), http.MethodGet, srv.URL+"/json/new?about:blank", &got)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusMethodNotAllowed || !strings.HasPrefix(err.Error(), "GET "+srv.URL) {
		t.Fatalf("GetJSON(GET /json/new) = %v; want a *StatusError 405 naming GET and the URL", err)
	}
}

// cdpServer serves a browser websocket: it reads one command, hands it to answer (which may reply, close
// or do nothing), then reads until the client hangs up, so no handler outlives the test.
func cdpServer(t *testing.T, answer func(c *websocket.Conn, cmd map[string]json.RawMessage)) string {
	t.Helper()
	var up websocket.Upgrader
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		var cmd map[string]json.RawMessage
		if err := c.ReadJSON(&cmd); err != nil {
			return
		}
		answer(c, cmd)
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http") + "/devtools/browser/x"
}

func reply(c *websocket.Conn, msgs ...string) {
	for _, m := range msgs {
		c.WriteMessage(websocket.TextMessage, []byte(m))
	}
}

func TestCall(t *testing.T) {
	tests := []struct {
		name       string
		params     any
		answer     func(c *websocket.Conn, cmd map[string]json.RawMessage)
		want       string // the result, when no error
		wantErr    string
		wantClosed bool
	}{
		{
			name:   "result after events and other ids",
			params: map[string]any{"expression": "1+1"},
			answer: func(c *websocket.Conn, cmd map[string]json.RawMessage) {
				if string(cmd["id"]) != "1" || string(cmd["method"]) != `"Runtime.evaluate"` || string(cmd["params"]) != `{"expression":"1+1"}` {
					reply(c, `{"id":1,"error":{"code":1,"message":"bad command"}}`)
					return
				}
				reply(c, `{"method":"Target.targetCreated","params":{}}`, `not json`, `{"id":2,"result":{}}`, `{"id":1,"result":{"value":2}}`)
			},
			want: `{"value":2}`,
		},
		{
			name: "no params",
			answer: func(c *websocket.Conn, cmd map[string]json.RawMessage) {
				if _, ok := cmd["params"]; ok {
					reply(c, `{"id":1,"error":{"code":1,"message":"params sent"}}`)
					return
				}
				reply(c, `{"id":1,"result":{}}`)
			},
			want: `{}`,
		},
		{
			name: "cdp error",
			answer: func(c *websocket.Conn, _ map[string]json.RawMessage) {
				reply(c, `{"id":1,"error":{"code":-32601,"message":"'X' wasn't found"}}`)
			},
			wantErr: "Runtime.evaluate: 'X' wasn't found (code -32601)",
		},
		{
			name:       "closed before the answer",
			answer:     func(c *websocket.Conn, _ map[string]json.RawMessage) { c.Close() },
			wantErr:    "Runtime.evaluate: connection closed before the answer",
			wantClosed: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := cdpServer(t, tt.answer)
			got, err := Call(context.Background(), ws, "Runtime.evaluate", tt.params)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.Is(err, ErrClosed) != tt.wantClosed {
					t.Fatalf("Call = %s, %v; want an error containing %q (ErrClosed %v)", got, err, tt.wantErr, tt.wantClosed)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Call = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

func TestCallCtxEnds(t *testing.T) {
	tests := []struct {
		name string
		ctx  func(got <-chan struct{}) (context.Context, context.CancelFunc)
		want error
	}{
		{name: "deadline", want: context.DeadlineExceeded, ctx: func(<-chan struct{}) (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}},
		{name: "cancellation", want: context.Canceled, ctx: func(got <-chan struct{}) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-got; cancel() }()
			return ctx, cancel
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := make(chan struct{})
			ws := cdpServer(t, func(*websocket.Conn, map[string]json.RawMessage) { close(got) }) // never answers
			ctx, cancel := tt.ctx(got)
			defer cancel()
			_, err := Call(ctx, ws, "Browser.close", nil)
			if !errors.Is(err, tt.want) || errors.Is(err, ErrClosed) {
				t.Fatalf("Call(unanswered, %s) = %v; want %v and not ErrClosed", tt.name, err, tt.want)
			}
		})
	}
}

func TestCallDialFails(t *testing.T) {
	srv := versionServer(t, "/json/version", 200, "{}") // speaks HTTP, refuses the upgrade
	ws := "ws" + strings.TrimPrefix(srv.URL, "http") + "/devtools/browser/x"
	if _, err := Call(context.Background(), ws, "Browser.close", nil); err == nil || !strings.HasPrefix(err.Error(), "dial "+ws) || errors.Is(err, ErrClosed) {
		t.Fatalf("Call(%s) = %v; want a dial error naming the URL", ws, err)
	}
}
