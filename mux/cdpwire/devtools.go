package cdpwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// The DevTools discovery endpoints (/json/version, /json/list, …) and one-shot CDP calls, for code that needs no mux.

// Answer bounds: /json/version is a few hundred bytes; /json/list grows with the tabs a browser has open.
const (
	maxVersion = 1 << 20
	maxJSON    = 4 << 20
)

// ErrClosed is Call's error class when the browser closed the connection before it answered, which is how
// Chromium often answers Browser.close.
var ErrClosed = errors.New("connection closed before the answer")

// StatusError is GetJSON's error for an answer other than 200 OK.
type StatusError struct {
	Method string
	URL    string
	Code   int    // the HTTP status code
	Status string // the status line's text, "404 Not Found"
}

func (e *StatusError) Error() string { return e.Method + " " + e.URL + ": " + e.Status }

// CallError is a browser's CDP error answer to a command (Call's, or any other client's of the protocol).
type CallError struct {
	Method  string
	Code    int
	Message string
}

func (e *CallError) Error() string {
	return fmt.Sprintf("%s: %s (code %d)", e.Method, e.Message, e.Code)
}

// Version is a browser's /json/version answer.
type Version struct {
	Browser              string         // "Chrome/140.0.7339.80"
	WebSocketDebuggerURL string         // the browser target's websocket
	Raw                  map[string]any // the whole object, for a caller that serves it on
}

// FetchVersion reads <httpBase>/json/version; httpBase is http(s)://host:port, optionally with a path and a
// trailing slash. An answer without a webSocketDebuggerUrl is an error. ctx bounds the request.
func FetchVersion(ctx context.Context, httpBase string) (Version, error) {
	u := strings.TrimSuffix(httpBase, "/") + "/json/version"
	var raw map[string]any
	if err := getJSON(ctx, http.MethodGet, u, maxVersion, &raw); err != nil {
		return Version{}, err
	}
	v := Version{Raw: raw}
	v.Browser, _ = raw["Browser"].(string)
	v.WebSocketDebuggerURL, _ = raw["webSocketDebuggerUrl"].(string)
	if v.WebSocketDebuggerURL == "" {
		return Version{}, fmt.Errorf("GET %s: no webSocketDebuggerUrl", u)
	}
	if _, err := url.Parse(v.WebSocketDebuggerURL); err != nil {
		return Version{}, fmt.Errorf("GET %s: webSocketDebuggerUrl: %w", u, err)
	}
	return v, nil
}

// GetJSON requests rawURL with method (Chromium ≥ 111 wants PUT for /json/new) and decodes the JSON answer,
// at most 4 MiB, into out. An answer other than 200 OK is a *StatusError. ctx bounds the request.
func GetJSON(ctx context.Context, method, rawURL string, out any) error {
	return getJSON(ctx, method, rawURL, maxJSON, out)
}

func getJSON(ctx context.Context, method, rawURL string, limit int64, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, rawURL, nil)
	if err != nil {
		return err
	}
	// A fresh transport per request: no idle keep-alive connection (or its goroutines) outlives the call, and
	// a DevTools endpoint is never reached through HTTP_PROXY.
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, rawURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Method: method, URL: rawURL, Code: resp.StatusCode, Status: resp.Status}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, limit)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: %w", method, rawURL, err)
	}
	return nil
}

// Call dials wsURL, sends one CDP command {"id":1,"method":method,"params":params} (params omitted when
// nil), skips events, and returns the command's result. A CDP error answer is a *CallError; a connection
// closed before the answer is an error wrapping ErrClosed; when ctx ends (deadline or cancellation) the
// error wraps ctx.Err(). ctx bounds the handshake too.
func Call(ctx context.Context, wsURL, method string, params any) (json.RawMessage, error) {
	req, err := json.Marshal(struct {
		ID     int    `json:"id"`
		Method string `json:"method"`
		Params any    `json:"params,omitempty"`
	}{1, method, params})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	d := websocket.Dialer{Proxy: nil}
	c, resp, err := d.DialContext(ctx, wsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", wsURL, err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.NetConn().SetDeadline(dl)
	}
	// Plain cancellation has no deadline to inherit: unblock the read (and a stuck write) by hand.
	stop := context.AfterFunc(ctx, func() { c.NetConn().SetDeadline(time.Now()) })
	defer stop()
	if err := c.WriteMessage(websocket.TextMessage, req); err != nil {
		if cerr := ended(ctx, err); cerr != nil {
			err = cerr
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			if cerr := ended(ctx, err); cerr != nil {
				return nil, fmt.Errorf("%s: %w", method, cerr)
			}
			return nil, fmt.Errorf("%s: %w: %w", method, ErrClosed, err)
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(msg, &r) != nil || r.ID != 1 {
			continue // an event
		}
		if r.Error != nil {
			return nil, &CallError{Method: method, Code: r.Error.Code, Message: r.Error.Message}
		}
		return r.Result, nil
	}
}

// ended returns ctx's error when err comes from ctx ending, else nil. A deadline copied from ctx onto the socket can fire a moment before ctx reports it, so a
// timeout counts as ctx's deadline.
func ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return context.DeadlineExceeded
	}
	return nil
}
