package ziniao

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"vibebrowser/mux/cdpwire"
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
	return cdpwire.GetJSON(ctx, method, cdpBase(host, port)+path, out)
}

// cdpAnswers reports whether the debugging port answers /json/version with a browser websocket.
func cdpAnswers(ctx context.Context, host string, port int) error {
	ctx, cancel := context.WithTimeout(ctx, probeBound)
	defer cancel()
	_, err := cdpwire.FetchVersion(ctx, cdpBase(host, port))
	return err
}

// cdpBase is an environment's DevTools HTTP endpoint: where the client runs, on the debugging port.
func cdpBase(host string, port int) string {
	return "http://" + net.JoinHostPort(host, strconv.Itoa(port))
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
	res, err := cdpwire.Call(ctx, wsURL, "Runtime.evaluate", map[string]any{"expression": expression, "returnByValue": true})
	if err != nil {
		return nil, err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, fmt.Errorf("Runtime.evaluate: %w", err)
	}
	if len(r.Exception) > 0 {
		return nil, fmt.Errorf("Runtime.evaluate %s threw: %s", expression, snippet(r.Exception))
	}
	return r.Result.Value, nil
}
