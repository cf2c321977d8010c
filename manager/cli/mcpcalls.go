package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"vibebrowser/manager/api"
)

// An MCP task's calls on its timeline (SPEC §17, issue 35). `vibe-browser mcp` passes the MCP client's
// stdin to the server and the server's stdout back byte for byte, as it comes; beside that it reads the
// JSON-RPC lines (MCP's stdio framing: one message a line) and pairs each tools/call request with its
// response by id. Each answered call is one call report (tool, arguments, result text, error or not,
// duration), which the manager records with shots after it, as for a browser-use call. A report is sent by a
// goroutine of its own: no byte of the server's answer waits for it.

const (
	// mcpLineMax bounds the part of one JSON-RPC line that is read for the timeline (a screenshot's result
	// can be megabytes); the line itself passes whole. A longer message is not paired: a request's call is
	// closed when the server exits, saying its answer was not seen.
	mcpLineMax = 16 << 20
	// mcpReportQueue bounds the reports waiting to be sent; past it a report is dropped, never the relay held.
	mcpReportQueue = 64
	// mcpReportTimeout bounds one report's request.
	mcpReportTimeout = 5 * time.Second
)

// mcpCalls pairs an MCP session's tools/call requests with their responses and reports each call.
type mcpCalls struct {
	base api.CallReport // the client, session and slot of every report
	full bool           // the timeline keeps code and output (api.TimelineFull); else the call's facts only
	now  func() time.Time
	out  chan api.CallReport // to the reporter (report)

	mu      sync.Mutex
	pending map[string]mcpCall // by the request's id, as its JSON
}

// mcpCall is a tools/call waiting for its answer.
type mcpCall struct {
	tool  string
	args  json.RawMessage
	start time.Time
}

func newMCPCalls(base api.CallReport, full bool) *mcpCalls {
	return &mcpCalls{base: base, full: full, now: time.Now, out: make(chan api.CallReport, mcpReportQueue),
		pending: map[string]mcpCall{}}
}

// rpcMessage is what the pairing reads of a JSON-RPC message: a request, a notification or a response.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// messages are the JSON-RPC messages of one line: one, or a batch's.
func messages(line []byte) []rpcMessage {
	line = bytes.TrimSpace(line)
	var batch []json.RawMessage
	if bytes.HasPrefix(line, []byte("[")) {
		if json.Unmarshal(line, &batch) != nil {
			return nil
		}
	} else {
		batch = []json.RawMessage{line}
	}
	var out []rpcMessage
	for _, raw := range batch {
		var m rpcMessage
		if json.Unmarshal(raw, &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// idKey is an id as the pairing keys it: its JSON, so 1 and "1" stay two ids; "" for none (a notification).
func idKey(id json.RawMessage) string {
	id = bytes.TrimSpace(id)
	if len(id) == 0 || string(id) == "null" {
		return ""
	}
	return string(id)
}

// fromClient reads one line the MCP client sent: a tools/call starts a call; a cancellation ends one.
func (c *mcpCalls) fromClient(line []byte) {
	for _, m := range messages(line) {
		switch {
		case m.Method == "tools/call" && idKey(m.ID) != "":
			var p struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			_ = json.Unmarshal(m.Params, &p)
			c.mu.Lock()
			c.pending[idKey(m.ID)] = mcpCall{tool: p.Name, args: p.Arguments, start: c.now()}
			c.mu.Unlock()
		case m.Method == "notifications/cancelled":
			var p struct {
				RequestID json.RawMessage `json:"requestId"`
				Reason    string          `json:"reason"`
			}
			if json.Unmarshal(m.Params, &p) == nil {
				why := "the MCP client cancelled it"
				if p.Reason != "" {
					why += ": " + p.Reason
				}
				c.end(idKey(p.RequestID), nil, why)
			}
		}
	}
}

// fromServer reads one line the server sent: a response ends its call.
func (c *mcpCalls) fromServer(line []byte) {
	for _, m := range messages(line) {
		if m.Method != "" || idKey(m.ID) == "" {
			continue // a request or notification of the server's own
		}
		why := ""
		if m.Error != nil {
			why = m.Error.Message
			if why == "" {
				why = "JSON-RPC error " + strconv.Itoa(m.Error.Code)
			}
		}
		c.end(idKey(m.ID), m.Result, why)
	}
}

// end reports the call of id, answered with result, or failed for why ("" when it did not).
func (c *mcpCalls) end(id string, result json.RawMessage, why string) {
	c.mu.Lock()
	call, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		return // not a tools/call of the client's
	}
	rep := c.base
	rep.Tool, rep.Start, rep.End, rep.Outcome = call.tool, call.start, c.now(), api.CallOK
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(result, &res)
	var text []string
	for _, part := range res.Content {
		switch part.Type {
		case "text":
			text = append(text, part.Text)
		case "":
		default:
			text = append(text, "["+part.Type+"]")
		}
	}
	switch {
	case why != "":
		rep.Outcome, rep.Exit, rep.Rule = api.CallFailed, 1, why
	case res.IsError:
		rep.Outcome, rep.Exit = api.CallFailed, 1
	}
	if c.full {
		if len(call.args) > 0 && string(call.args) != "null" {
			var pretty bytes.Buffer
			if json.Indent(&pretty, call.args, "", "  ") == nil {
				rep.Code = pretty.String()
			} else {
				rep.Code = string(call.args)
			}
		}
		rep.Stdout = strings.Join(text, "\n")
	} else {
		rep.Rule = ""
	}
	rep.Cut()
	select {
	case c.out <- rep:
	default: // the reporter is behind: this call is not recorded rather than the server's answer held
	}
}

// closeAll ends every call still waiting: the server exited (or its answer was too long to read).
func (c *mcpCalls) closeAll() {
	c.mu.Lock()
	ids := make([]string, 0, len(c.pending))
	for id := range c.pending {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.end(id, nil, "no answer was seen: the MCP server exited first, or its answer was longer than the timeline reads")
	}
	close(c.out)
}

// report sends the reports as they come, each bounded, until closeAll; send is the manager's ReportCall.
func (c *mcpCalls) report(send func(api.CallReport) error) {
	for rep := range c.out {
		_ = send(rep) // best effort, as the shim's: the timeline misses a step, the agent nothing
	}
}

// lines splits a stream into its lines, handing each whole line (its first mcpLineMax bytes) to onLine.
type lines struct {
	onLine func([]byte)
	line   []byte
	over   bool // the line passed mcpLineMax: the rest of it is not kept
}

// feed takes the stream's next bytes.
func (l *lines) feed(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !l.over && len(l.line)+len(part) <= mcpLineMax {
			l.line = append(l.line, part...)
		} else {
			l.over = true
		}
		if i < 0 {
			return
		}
		if !l.over {
			l.onLine(l.line)
		}
		l.line, l.over = l.line[:0], false
		p = p[i+1:]
	}
}

// end is the end of the stream: a last line without its newline counts.
func (l *lines) end() {
	if len(l.line) > 0 && !l.over {
		l.onLine(l.line)
	}
	l.line, l.over = nil, false
}

// tapWriter passes every write on to dst first, then reads its lines.
type tapWriter struct {
	dst   io.Writer
	lines lines
}

func (w *tapWriter) Write(p []byte) (int, error) {
	n, err := w.dst.Write(p)
	w.lines.feed(p[:n])
	return n, err
}

// relayLines copies src to dst as it comes, reading its lines after each copy, until the end of src or
// a write dst refuses.
func relayLines(src io.Reader, dst io.Writer, onLine func([]byte)) {
	w := &tapWriter{dst: dst, lines: lines{onLine: onLine}}
	_, _ = io.Copy(w, src)
	w.lines.end()
}
