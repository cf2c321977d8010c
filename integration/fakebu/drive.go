package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// drive interprets a tiny script on stdin against BU_CDP_WS, doing what browser-use 0.13 does on connect
// (getTargets twice, a background about:blank tab, a flat attach, domains enabled) and then:
//
//	open URL     navigate this call's tab to URL and wait for the load
//	eval EXPR    print the JSON value of EXPR in this call's tab
//	targets      print the URLs of the page targets this client sees, one per line
//	tab TEXT     go on in the client's page whose URL holds TEXT (an earlier call's tab), as an agent
//	             that comes back to a tab does
//	type TEXT    insert TEXT where the tab's focus is (Input.insertText, as browser-use types)
//	sleep DUR    wait (a Go duration)
//	env NAME     print the value of environment variable NAME (what the shim injected)
//	waitfile N   wait (up to 20s) until $VIBE_DOWNLOAD_DIR/N exists, as an agent waits for its download,
//	             and print its path
//
// A non-empty marker is put in front of the tab's document.title after the attach and after each open, as
// browser-harness 0.1.12+ does to the tab it controls.
func drive(script []byte, out io.Writer, marker string) error {
	c, err := dialEndpoint()
	if err != nil {
		return err
	}
	defer c.conn.Close()
	for range 2 {
		if _, err := c.call("Target.getTargets", nil, ""); err != nil {
			return err
		}
	}
	var created struct{ TargetID string }
	if err := c.into(&created, "Target.createTarget", map[string]any{"url": "about:blank", "background": true}, ""); err != nil {
		return err
	}
	var attached struct{ SessionID string }
	if err := c.into(&attached, "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, ""); err != nil {
		return err
	}
	session := attached.SessionID
	for _, domain := range []string{"Page", "DOM", "Runtime", "Network"} {
		if _, err := c.call(domain+".enable", nil, session); err != nil {
			return err
		}
	}
	if err := c.mark(session, marker); err != nil {
		return err
	}
	lines := bufio.NewScanner(strings.NewReader(string(script)))
	for lines.Scan() {
		verb, arg, _ := strings.Cut(strings.TrimSpace(lines.Text()), " ")
		switch verb {
		case "", "#":
		case "open":
			if _, err := c.call("Page.navigate", map[string]any{"url": arg}, session); err != nil {
				return err
			}
			if err := c.waitLoaded(session); err != nil {
				return err
			}
			if err := c.mark(session, marker); err != nil {
				return err
			}
		case "eval":
			v, err := c.eval(session, arg)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, string(v))
		case "targets":
			var res struct {
				TargetInfos []struct{ Type, URL string }
			}
			if err := c.into(&res, "Target.getTargets", nil, ""); err != nil {
				return err
			}
			for _, t := range res.TargetInfos {
				if t.Type == "page" {
					fmt.Fprintln(out, t.URL)
				}
			}
		case "tab":
			var res struct {
				TargetInfos []struct{ TargetID, Type, URL string }
			}
			if err := c.into(&res, "Target.getTargets", nil, ""); err != nil {
				return err
			}
			found := ""
			for _, t := range res.TargetInfos {
				if t.Type == "page" && strings.Contains(t.URL, arg) {
					found = t.TargetID
				}
			}
			if found == "" {
				return fmt.Errorf("tab: no page of this client's holds %q in its URL", arg)
			}
			var at struct{ SessionID string }
			if err := c.into(&at, "Target.attachToTarget", map[string]any{"targetId": found, "flatten": true}, ""); err != nil {
				return err
			}
			session = at.SessionID
			if _, err := c.call("Runtime.enable", nil, session); err != nil {
				return err
			}
		case "type":
			if _, err := c.call("Input.insertText", map[string]any{"text": arg}, session); err != nil {
				return err
			}
		case "env":
			fmt.Fprintln(out, os.Getenv(arg))
		case "waitfile":
			p := filepath.Join(os.Getenv("VIBE_DOWNLOAD_DIR"), arg)
			deadline := time.Now().Add(20 * time.Second)
			for _, err := os.Stat(p); err != nil; _, err = os.Stat(p) {
				if time.Now().After(deadline) {
					return fmt.Errorf("waitfile: %s did not appear: %w", p, err)
				}
				time.Sleep(50 * time.Millisecond)
			}
			fmt.Fprintln(out, p)
		case "sleep":
			d, err := time.ParseDuration(arg)
			if err != nil {
				return err
			}
			time.Sleep(d)
		default:
			return fmt.Errorf("unknown drive verb %q", verb)
		}
	}
	return lines.Err()
}

// dialEndpoint connects to BU_CDP_WS, as browser-use does with the endpoint the shim hands it.
func dialEndpoint() (*cdp, error) {
	endpoint := os.Getenv("BU_CDP_WS")
	if endpoint == "" {
		return nil, errors.New("BU_CDP_WS is not set")
	}
	conn, _, err := websocket.DefaultDialer.Dial(endpoint, nil)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", endpoint, err)
	}
	return &cdp{conn: conn}, nil
}

// cdp is a minimal sequential CDP client: one call at a time, events skipped.
type cdp struct {
	conn *websocket.Conn
	id   atomic.Int64
}

func (c *cdp) call(method string, params any, session string) (json.RawMessage, error) {
	id := c.id.Add(1)
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	if err := c.conn.WriteJSON(msg); err != nil {
		return nil, err
	}
	for {
		var resp struct {
			ID     int64           `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := c.conn.ReadJSON(&resp); err != nil {
			return nil, fmt.Errorf("%s: %w", method, err)
		}
		if resp.ID != id {
			continue
		}
		if resp.Error != nil {
			return nil, fmt.Errorf("%s: CDP error %d: %s", method, resp.Error.Code, resp.Error.Message)
		}
		return resp.Result, nil
	}
}

func (c *cdp) into(out any, method string, params any, session string) error {
	res, err := c.call(method, params, session)
	if err != nil {
		return err
	}
	return json.Unmarshal(res, out)
}

func (c *cdp) eval(session, expr string) (json.RawMessage, error) {
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails any `json:"exceptionDetails"`
	}
	if err := c.into(&res, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, session); err != nil {
		return nil, err
	}
	if res.ExceptionDetails != nil {
		return nil, fmt.Errorf("eval %q threw: %v", expr, res.ExceptionDetails)
	}
	return res.Result.Value, nil
}

// mark puts marker in front of the page's title unless it is there already (no-op for "").
func (c *cdp) mark(session, marker string) error {
	if marker == "" {
		return nil
	}
	m, _ := json.Marshal(marker)
	_, err := c.eval(session, fmt.Sprintf("if (!document.title.startsWith(%s)) document.title = %s + document.title", m, m))
	return err
}

func (c *cdp) waitLoaded(session string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		v, err := c.eval(session, "document.readyState")
		if err == nil && string(v) == `"complete"` {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return errors.New("page did not load within 30s")
}
