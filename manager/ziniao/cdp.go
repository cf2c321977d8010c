package ziniao

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
)

// probeBound bounds one CDP probe (an HTTP request, or a websocket evaluation): a live local environment
// answers in milliseconds.
const probeBound = 3 * time.Second

// errWebDriverUnmasked is the reason instrumentation is not live.
var errWebDriverUnmasked = errors.New("navigator.webdriver is true (Ziniao's instrumentation did not inject)")

// cdpTarget is the part of a /json/list or /json/new entry we use.
type cdpTarget struct {
	Type string `json:"type"`
	WS   string `json:"webSocketDebuggerUrl"`
}

// cdpGet requests http://host:port<path> with method and decodes the JSON answer into out.
func cdpGet(ctx context.Context, method, host string, port int, path string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, probeBound)
	defer cancel()
	u := "http://" + net.JoinHostPort(host, strconv.Itoa(port)) + path
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return err
	}
	// A fresh transport per probe: no idle keep-alive connections (or their goroutines) outlive the call.
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s", method, u, resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(out); err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	return nil
}

// cdpAnswers reports whether the debugging port answers /json/version with a browser websocket.
func cdpAnswers(ctx context.Context, host string, port int) error {
	var v struct {
		WS string `json:"webSocketDebuggerUrl"`
	}
	if err := cdpGet(ctx, http.MethodGet, host, port, "/json/version", &v); err != nil {
		return err
	}
	if v.WS == "" {
		return fmt.Errorf("port %d: /json/version has no webSocketDebuggerUrl", port)
	}
	return nil
}

// instrumentationLive attaches to a page target (creating about:blank when there is none; the page is kept:
// closing an environment's last page kills it) and evaluates navigator.webdriver. It returns nil when the
// value is anything but true, errWebDriverUnmasked when it is true, or why it could not tell.
func instrumentationLive(ctx context.Context, host string, port int) error {
	var targets []cdpTarget
	if err := cdpGet(ctx, http.MethodGet, host, port, "/json/list", &targets); err != nil {
		return err
	}
	var ws string
	for _, t := range targets {
		if t.Type == "page" && t.WS != "" {
			ws = t.WS
			break
		}
	}
	if ws == "" {
		// Chromium ≥ 111 requires PUT for /json/new.
		var t cdpTarget
		if err := cdpGet(ctx, http.MethodPut, host, port, "/json/new?about:blank", &t); err != nil {
			return fmt.Errorf("no page target, and creating one failed: %w", err)
		}
		if t.WS == "" {
			return errors.New("no page target, and the created one has no webSocketDebuggerUrl")
		}
		ws = t.WS
	}
	// The environment names itself 127.0.0.1; reach it where the client is.
	u, err := url.Parse(ws)
	if err != nil {
		return fmt.Errorf("page webSocketDebuggerUrl %q: %w", ws, err)
	}
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	v, err := evaluate(ctx, u.String(), "navigator.webdriver")
	if err != nil {
		return err
	}
	if string(v) == "true" {
		return errWebDriverUnmasked
	}
	return nil
}

// evaluate runs expression in the page at wsURL (Runtime.evaluate, returnByValue) and returns its JSON
// value (empty for undefined).
func evaluate(ctx context.Context, wsURL, expression string) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, probeBound)
	defer cancel()
	d := websocket.Dialer{Proxy: nil, HandshakeTimeout: probeBound}
	c, resp, err := d.DialContext(ctx, wsURL, nil)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", wsURL, err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	defer c.Close()
	dl, _ := ctx.Deadline()
	c.SetWriteDeadline(dl)
	c.SetReadDeadline(dl)
	// Plain cancellation (not only the deadline) must unblock the read.
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	req, err := json.Marshal(map[string]any{
		"id":     1,
		"method": "Runtime.evaluate",
		"params": map[string]any{"expression": expression, "returnByValue": true},
	})
	if err != nil {
		return nil, err
	}
	if err := c.WriteMessage(websocket.TextMessage, req); err != nil {
		return nil, fmt.Errorf("Runtime.evaluate: %w", err)
	}
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("Runtime.evaluate: %w", ctx.Err())
			}
			return nil, fmt.Errorf("Runtime.evaluate: %w", err)
		}
		var r struct {
			ID     int             `json:"id"`
			Error  json.RawMessage `json:"error"`
			Result struct {
				Result struct {
					Value json.RawMessage `json:"value"`
				} `json:"result"`
				Exception json.RawMessage `json:"exceptionDetails"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &r) != nil || r.ID != 1 {
			continue // an event
		}
		if len(r.Error) > 0 {
			return nil, fmt.Errorf("Runtime.evaluate: %s", r.Error)
		}
		if len(r.Result.Exception) > 0 {
			return nil, fmt.Errorf("Runtime.evaluate %s threw: %s", expression, snippet(r.Result.Exception))
		}
		return r.Result.Result.Value, nil
	}
}
