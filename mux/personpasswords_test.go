package mux

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// What a person types key by key or pastes into a password field of an agent's tab through a live view
// is hidden from every client's calls (PasswordTexts), pending while they type and kept after; what they
// type into a text field is not.
func TestPersonPasswords(t *testing.T) {
	endpoint := startChromium(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, loginForm) }))
	t.Cleanup(srv.Close)
	m := startMux(t, nil, Config{Upstream: endpoint})
	ctx := testCtx(t)

	c := newClient(t, m, "task-a")
	newClient(t, m, "task-b") // another task on the browser: the person's passwords are hidden from its calls too
	tab := c.createTarget(srv.URL + "/login")
	s := c.attach(tab)
	eval := func(expr string) json.RawMessage {
		t.Helper()
		r := result[struct {
			Result struct {
				Value json.RawMessage `json:"value"`
			} `json:"result"`
		}](t, c.call("Runtime.evaluate", fmt.Sprintf(`{"expression":%q,"returnByValue":true}`, expr), s))
		return r.Result.Value
	}
	waitEval(t, eval, "window.ready === true")
	v, err := m.op.View(ctx, tab, ViewOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Hold("person"); err != nil {
		t.Fatal(err)
	}
	// The tab is the person's now: the test reads and focuses it on an operator session of its own (a
	// click of the person's would move focus).
	op, err := m.op.attach(ctx, tab, nil)
	if err != nil {
		t.Fatal(err)
	}
	eval = func(expr string) json.RawMessage {
		t.Helper()
		res, err := m.op.call(ctx, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, op.id)
		var r struct {
			Result struct {
				Value json.RawMessage `json:"value"`
			} `json:"result"`
		}
		if err != nil || json.Unmarshal(res, &r) != nil {
			t.Fatalf("evaluate %s: %v %s", expr, err, res)
		}
		return r.Result.Value
	}
	typeText := func(text string) {
		t.Helper()
		for _, r := range text {
			k := string(r)
			for _, e := range []KeyEvent{{Type: "keyDown", Key: k, Text: k}, {Type: "keyUp", Key: k}} {
				if err := v.Key(ctx, e); err != nil {
					t.Fatalf("Key(%+v): %v", e, err)
				}
			}
		}
	}
	backspace := func() {
		t.Helper()
		for _, typ := range []string{"rawKeyDown", "keyUp"} {
			if err := v.Key(ctx, KeyEvent{Type: typ, Key: "Backspace", Code: "Backspace", WindowsVirtualKeyCode: 8}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The person's own focus: a click would do it; the test focuses through the page.
	eval(`document.getElementById("user").focus()`)
	typeText("alice")
	eval(`document.getElementById("pw").focus()`)
	typeText("typed-pw-1x")
	backspace()
	if got := string(eval(`document.getElementById("pw").value`)); got != `"typed-pw-1"` {
		t.Fatalf("the field holds %s after typing; want typed-pw-1", got)
	}
	for _, id := range []string{"task-a", "task-b", "gone"} {
		if got := m.taps.PasswordTexts(ctx, id); !slices.Contains(got, "typed-pw-1") || slices.Contains(got, "alice") {
			t.Errorf("PasswordTexts(%s) while typing = %q; want typed-pw-1 and not alice", id, got)
		}
	}
	// A paste into the frame's password field, then focus back to a text field: both kept.
	eval(`document.getElementById("f").contentDocument.getElementById("fpw").focus()`)
	if err := v.InsertText(ctx, "pasted-pw-2"); err != nil {
		t.Fatal(err)
	}
	eval(`document.getElementById("user").focus()`)
	typeText("x")
	v.Release()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	got := m.taps.PasswordTexts(ctx, "task-a")
	for _, want := range []string{"typed-pw-1", "pasted-pw-2"} {
		if !slices.Contains(got, want) {
			t.Errorf("PasswordTexts after the view ended = %q; want %s in it", got, want)
		}
	}
	for _, text := range got {
		if text == "alice" || text == "x" || text != "typed-pw-1" && strings.HasPrefix("typed-pw-1x", text) {
			t.Errorf("PasswordTexts holds %q: text typed into a text field, or a password's prefix", text)
		}
	}
	m.op.closeSession(op)
}
