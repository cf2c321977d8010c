package keeper

import (
	"slices"
	"strings"
	"testing"
)

// lineIndex is the index of the first line of the fake's log that starts with prefix, -1 if none.
func lineIndex(lines []string, prefix string) int {
	return slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, prefix) })
}

func countLines(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

func TestResetOnClientLoss(t *testing.T) {
	h := startKeeper(t, 0)
	h.ready()
	c := h.dial()
	// S1 attached by a command (its answer and its event), E1 by an event alone, C1 a child of S1, and S2
	// attached and detached by the client itself.
	c.write(`{"id":1,"method":"Target.attachToTarget","params":{"targetId":"T1","flatten":true}}`)
	r, before := c.until(1)
	if !strings.Contains(string(r.Result), `"S1"`) || len(before) != 1 || before[0].Method != attachedToTarget {
		t.Fatalf("attachToTarget = %s after %+v; want S1 and its event first", r.Result, before)
	}
	c.call(2, "Test.emit", `{"event":{"method":"Target.attachedToTarget","params":{"sessionId":"E1","targetInfo":{},"waitingForDebugger":false}}}`)
	c.call(3, "Test.emit", `{"event":{"method":"Target.attachedToTarget","params":{"sessionId":"C1","targetInfo":{},"waitingForDebugger":false},"sessionId":"S1"}}`)
	c.call(4, "Target.attachToTarget", `{"targetId":"T2","flatten":true}`) // S2
	c.call(5, "Target.detachFromTarget", `{"sessionId":"S2"}`)
	c.call(6, "Target.setDiscoverTargets", `{"discover":true}`)
	c.call(7, "Browser.setDownloadBehavior", `{"behavior":"allow","downloadPath":"/tmp"}`)
	c.nc.Close()

	next := h.dial() // served once the reset is answered
	next.call(1, "Test.echo", "")
	lines := h.sent()
	for _, want := range []string{
		`Target.setAutoAttach {"autoAttach":false,"waitForDebuggerOnStart":false}`,
		`Target.setDiscoverTargets {"discover":false}`,
		`Target.detachFromTarget {"sessionId":"S1"}`,
		`Target.detachFromTarget {"sessionId":"E1"}`,
		`Target.detachFromTarget {"sessionId":"C1"} session=S1`,
		`Browser.setDownloadBehavior {"behavior":"default"}`,
	} {
		if countLines(lines, want) != 1 {
			t.Errorf("the fake read %q %d times; want once, in\n%s", want, countLines(lines, want), strings.Join(lines, "\n"))
		}
	}
	if child, parent := lineIndex(lines, `Target.detachFromTarget {"sessionId":"C1"}`), lineIndex(lines, `Target.detachFromTarget {"sessionId":"S1"}`); child > parent {
		t.Errorf("C1 detached at line %d, its parent S1 at %d; want the child first", child, parent)
	}
	if n := countLines(lines, `Target.detachFromTarget {"sessionId":"S2"}`); n != 1 {
		t.Errorf("S2, detached by its client, was detached %d times; want once (the client's)", n)
	}
	if i, echo := lineIndex(lines, `Browser.setDownloadBehavior {"behavior":"default"}`), lineIndex(lines, "Test.echo"); i < 0 || echo < i {
		t.Errorf("the next client's command at line %d, the reset's end at %d; want it after the reset", echo, i)
	}
}

func TestAnswerToAGoneClientIsDropped(t *testing.T) {
	h := startKeeper(t, 0)
	h.ready()
	first := h.dial()
	first.write(`{"id":7,"method":"Test.slow","params":{"until":"a"}}`)
	h.waitSent("Test.slow")
	first.nc.Close()

	next := h.dial()
	// id 7 is still in flight for the gone client: taking it would make its answer this one's.
	if r := next.call(7, "Test.echo", ""); r.Error == nil || !strings.Contains(r.Error.Message, "still in flight") {
		t.Fatalf("id 7 reused while the gone client's is in flight = %+v; want a refusal naming the rule", r)
	}
	// The release answers 7 first (the fake writes in order), then 8.
	next.write(`{"id":8,"method":"Test.release","params":{"key":"a"}}`)
	_, before := next.until(8)
	for _, m := range before {
		if m.ID != nil && *m.ID == 7 {
			t.Fatalf("the next client got the gone client's answer to id 7: %+v", m)
		}
	}
	if r := next.call(7, "Test.echo", ""); r.Error != nil {
		t.Errorf("id 7 once the gone client's answer is dropped = %+v; want it free again", r.Error)
	}
}

func TestNoClientNoEvents(t *testing.T) {
	h := startKeeper(t, 0)
	h.ready()
	first := h.dial()
	// During the reset, with no client: an event (dropped) and a session attached for no one (detached at once).
	first.call(1, "Test.arm", `{"on":"Target.setAutoAttach","event":{"method":"Test.unseen","params":{}}}`)
	first.call(2, "Test.arm", `{"on":"Target.setDiscoverTargets","event":{"method":"Target.attachedToTarget","params":{"sessionId":"U1","targetInfo":{},"waitingForDebugger":false}}}`)
	first.nc.Close()

	next := h.dial()
	next.write(`{"id":1,"method":"Test.echo"}`)
	_, before := next.until(1)
	for _, m := range before {
		if m.Method == "Test.unseen" || m.Method == attachedToTarget {
			t.Errorf("the next client got %s, sent while no client was connected", m.Method)
		}
	}
	h.waitSent(`Target.detachFromTarget {"sessionId":"U1"}`)
}
