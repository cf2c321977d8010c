//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux"
)

const muxToken = "0123456789abcdef0123456789abcdef"

// muxUnderTest is a mux in front of a browser, with its client URLs.
type muxUnderTest struct {
	*mux.Mux
	WSBase   string // ws://127.0.0.1:PORT/TOKEN (append /client-<id>)
	HTTPBase string // http://127.0.0.1:PORT/TOKEN
	// ProbesRefusals marks a test that sends what the table refuses on purpose; otherwise a refusal of a
	// real client's call fails the test.
	ProbesRefusals bool
}

// startMuxOn runs a mux for upstream until the test ends.
func startMuxOn(t *testing.T, upstream string, cfg mux.Config) *muxUnderTest {
	t.Helper()
	cfg.Upstream = upstream
	cfg.Token = muxToken
	cfg.Addr = "127.0.0.1:0"
	// The muxes here serve real clients only: whatever the table refused of theirs fails the test.
	refused := &syncBuffer{}
	var w io.Writer = refused
	if testing.Verbose() {
		w = io.MultiWriter(refused, zerolog.NewTestWriter(t))
	}
	cfg.Log = zerolog.New(w).Level(zerolog.InfoLevel)
	mt := &muxUnderTest{}
	t.Cleanup(func() {
		if !mt.ProbesRefusals {
			wantNoRefusals(t, refused.String())
		}
	})
	m, err := mux.New(cfg)
	if err != nil {
		t.Fatalf("mux.New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("mux Serve: %v", err)
		}
	})
	testkit.WaitFor(t, 20*time.Second, "mux connected to Chromium", func() bool { return m.Stats().Upstream })
	mt.Mux, mt.WSBase, mt.HTTPBase = m, "ws://"+m.Addr()+"/"+muxToken, "http://"+m.Addr()+"/"+muxToken
	return mt
}

// cdpError is a CDP error answer.
type cdpError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *cdpError) Error() string { return fmt.Sprintf("CDP error %d: %s", e.Code, e.Message) }

// cdpEvent is one event a rawCDP client received.
type cdpEvent struct {
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	SessionID string          `json:"sessionId"`
}

// rawCDP is a minimal CDP client over one WebSocket that keeps every event, for exact assertions.
type rawCDP struct {
	t   testing.TB
	ws  *websocket.Conn
	wmu sync.Mutex

	mu sync.Mutex
	// mu guards the fields below.
	next    int
	waiters map[int]chan rawReply
	events  []cdpEvent
	closed  bool
	err     error
}

type rawReply struct {
	result json.RawMessage
	err    error
}

func dialRaw(t testing.TB, url string) *rawCDP {
	t.Helper()
	ws, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	ws.SetReadLimit(-1)
	c := &rawCDP{t: t, ws: ws, waiters: map[int]chan rawReply{}}
	t.Cleanup(func() { ws.Close() })
	go c.read()
	return c
}

func (c *rawCDP) read() {
	for {
		_, b, err := c.ws.ReadMessage()
		if err != nil {
			c.mu.Lock()
			c.closed, c.err = true, err
			for id, w := range c.waiters {
				w <- rawReply{err: fmt.Errorf("connection closed: %w", err)}
				delete(c.waiters, id)
			}
			c.mu.Unlock()
			return
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *cdpError       `json:"error"`
			cdpEvent
		}
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		c.mu.Lock()
		if m.ID != nil {
			if w := c.waiters[*m.ID]; w != nil {
				delete(c.waiters, *m.ID)
				if m.Error != nil {
					w <- rawReply{err: m.Error}
				} else {
					w <- rawReply{result: m.Result}
				}
			}
		} else if m.Method != "" {
			c.events = append(c.events, m.cdpEvent)
		}
		c.mu.Unlock()
	}
}

// Call sends a command and waits (bounded) for its answer.
func (c *rawCDP) Call(method string, params any, session string) (json.RawMessage, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("connection closed: %w", c.err)
	}
	c.next++
	id := c.next
	w := make(chan rawReply, 1)
	c.waiters[id] = w
	c.mu.Unlock()
	msg := map[string]any{"id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	if session != "" {
		msg["sessionId"] = session
	}
	b, _ := json.Marshal(msg)
	c.wmu.Lock()
	err := c.ws.WriteMessage(websocket.TextMessage, b)
	c.wmu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case r := <-w:
		return r.result, r.err
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("%s: no answer in 30s", method)
	}
}

// must is Call that fails the test on error and decodes the result into out (when non-nil).
func (c *rawCDP) must(method string, params any, session string, out any) {
	c.t.Helper()
	res, err := c.Call(method, params, session)
	if err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
	if out != nil {
		if err := json.Unmarshal(res, out); err != nil {
			c.t.Fatalf("%s result %s: %v", method, res, err)
		}
	}
}

// Events returns the events received so far with the given method ("" for all).
func (c *rawCDP) Events(method string) []cdpEvent {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []cdpEvent
	for _, e := range c.events {
		if method == "" || e.Method == method {
			out = append(out, e)
		}
	}
	return out
}

// createPage creates a page, attaches to it and waits until it has loaded url (as a client that goes on
// to evaluate in it must: Chrome answers createTarget before the navigation commits), returning target
// and session ids.
func (c *rawCDP) createPage(url string) (targetID, sessionID string) {
	c.t.Helper()
	return c.openPage(url, false)
}

// createBackgroundPage is createPage of a tab that opens behind the others (background: true), as an
// agent's new tab does: it never has the window's focus.
func (c *rawCDP) createBackgroundPage(url string) (targetID, sessionID string) {
	c.t.Helper()
	return c.openPage(url, true)
}

func (c *rawCDP) openPage(url string, background bool) (targetID, sessionID string) {
	c.t.Helper()
	var ct struct{ TargetID string }
	params := map[string]any{"url": url}
	if background {
		params["background"] = true
	}
	c.must("Target.createTarget", params, "", &ct)
	var at struct{ SessionID string }
	c.must("Target.attachToTarget", map[string]any{"targetId": ct.TargetID, "flatten": true}, "", &at)
	if url != "" && !strings.HasPrefix(url, "about:") {
		testkit.WaitFor(c.t, 15*time.Second, "the new page to load "+url, func() bool {
			v, err := c.evaluate(at.SessionID, `document.readyState === "complete" && location.href !== "about:blank"`)
			return err == nil && string(v) == "true"
		})
	}
	return ct.TargetID, at.SessionID
}

// targetIDs returns the ids getTargets shows this client (pages only unless all).
func (c *rawCDP) targetIDs(all bool) []string {
	c.t.Helper()
	var r struct {
		TargetInfos []struct{ TargetID, Type string }
	}
	c.must("Target.getTargets", map[string]any{"filter": []any{map[string]any{}}}, "", &r)
	var ids []string
	for _, ti := range r.TargetInfos {
		if all || ti.Type == "page" {
			ids = append(ids, ti.TargetID)
		}
	}
	return ids
}

// evaluate runs expr in the session and returns the value as JSON.
func (c *rawCDP) evaluate(session, expr string) (json.RawMessage, error) {
	res, err := c.Call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, session)
	if err != nil {
		return nil, err
	}
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	json.Unmarshal(res, &r)
	if r.ExceptionDetails != nil {
		return nil, fmt.Errorf("exception: %s", r.ExceptionDetails)
	}
	return r.Result.Value, nil
}
