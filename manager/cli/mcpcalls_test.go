package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/api"
)

// The pairing of tools/call requests with their answers: ids of either kind, errors of both kinds,
// notifications and the server's own messages passed over, a batch, a cancellation, and an answer that
// never comes (closed when the server exits).
func TestMCPCallsPairRequestsWithAnswers(t *testing.T) {
	c := newMCPCalls(api.CallReport{Client: "t1", Session: "shop-t1"}, true)
	clock := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	c.now = func() time.Time { clock = clock.Add(100 * time.Millisecond); return clock }
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"browser_navigate","arguments":{"url":"https://shop.example/"}}}`,
		`{"jsonrpc":"2.0","id":"1","method":"tools/call","params":{"name":"browser_tabs","arguments":{"action":"list"}}}`,
		`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"browser_click"}},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"browser_type"}}]`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"browser_wait_for"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"browser_snapshot"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4,"reason":"took too long"}}`,
		`not json at all`,
	} {
		c.fromClient([]byte(l))
	}
	for _, l := range []string{
		`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info"}}`,
		`{"jsonrpc":"2.0","id":99,"method":"roots/list"}`,
		`{"jsonrpc":"2.0","id":"1","result":{"content":[{"type":"text","text":"- 0: (current) Shop"}]}}`,
		`{"result":{"content":[{"type":"text","text":"navigated"},{"type":"image","data":"AAAA"}]},"jsonrpc":"2.0","id":1}`,
		`[{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"no such element"}],"isError":true}},{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"bad arguments"}}]`,
		`{"jsonrpc":"2.0","id":4,"result":{"content":[]}}`, // after its cancellation: already closed
	} {
		c.fromServer([]byte(l))
	}
	c.closeAll()
	var got []string
	reps := map[string]api.CallReport{}
	for rep := range c.out {
		got = append(got, rep.Tool+" "+rep.Outcome)
		reps[rep.Tool] = rep
	}
	want := []string{"browser_wait_for failed", "browser_tabs ok", "browser_navigate ok", "browser_click failed",
		"browser_type failed", "browser_snapshot failed"} // the cancellation came before any answer
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("reports = %q; want %q", got, want)
	}
	nav := reps["browser_navigate"]
	if nav.Client != "t1" || nav.Session != "shop-t1" || !strings.Contains(nav.Code, `"url": "https://shop.example/"`) ||
		nav.Stdout != "navigated\n[image]" || nav.End.Sub(nav.Start) <= 0 || nav.Exit != 0 {
		t.Errorf("browser_navigate's report = %+v", nav)
	}
	if r := reps["browser_type"]; r.Rule != "bad arguments" || r.Exit != 1 {
		t.Errorf("browser_type's report = %+v; want the JSON-RPC error's message", r)
	}
	if r := reps["browser_wait_for"]; !strings.Contains(r.Rule, "cancelled it: took too long") {
		t.Errorf("browser_wait_for's report = %+v; want its cancellation", r)
	}
	if r := reps["browser_snapshot"]; !strings.Contains(r.Rule, "no answer was seen") {
		t.Errorf("browser_snapshot's report = %+v; want it closed without an answer", r)
	}
}

// With a timeline of the steps only (meta), a report holds the call's facts and no arguments or result.
func TestMCPCallsMetaKeepsNoText(t *testing.T) {
	c := newMCPCalls(api.CallReport{Client: "t1"}, false)
	c.fromClient([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"browser_type","arguments":{"text":"secret"}}}`))
	c.fromServer([]byte(`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"secret again"}}`))
	c.closeAll()
	rep := <-c.out
	if rep.Tool != "browser_type" || rep.Outcome != api.CallFailed || rep.Code != "" || rep.Stdout != "" || rep.Rule != "" {
		t.Errorf("meta report = %+v; want the tool and outcome alone", rep)
	}
}

// The relay passes every byte on as it came, and reads whole lines: the last one without its newline too,
// an over-long one not at all.
func TestRelayLines(t *testing.T) {
	long := strings.Repeat("x", mcpLineMax+1)
	in := "one\ntwo\r\n\n" + long + "\nthree"
	var out bytes.Buffer
	var lines []string
	relayLines(strings.NewReader(in), &out, func(l []byte) { lines = append(lines, string(l)) })
	if out.String() != in {
		t.Errorf("the relay changed the bytes (%d in, %d out)", len(in), out.Len())
	}
	want := []string{"one", "two\r", "", "three"}
	if strings.Join(lines, "|") != strings.Join(want, "|") {
		t.Errorf("lines = %q; want %q", lines, want)
	}
}
