package mux

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// loginForm is a page with password and text fields in the document, in an open shadow root and in a
// same-origin frame; every focus, blur, visibility and size event, in the page and in its frame, is noted
// in window.seen.
const loginForm = `<title>Log in</title>
<input id=user> <input id=pw type=password> <button id=go>Log in</button>
<div id=host></div>
<iframe id=f srcdoc="<input id=fpw type=password><input id=ftext>"></iframe>
<script>
window.seen = [];
const note = (w, where) => {
	for (const k of ["focus", "blur", "focusin", "focusout", "visibilitychange", "resize", "pagehide", "pageshow"]) {
		w.addEventListener(k, (e) => seen.push(where + ":" + k + ":" + (e.target.id || e.target.nodeName || "window")), true);
	}
};
note(window, "top");
document.getElementById("host").attachShadow({mode: "open"}).innerHTML = "<input id=spw type=password><input id=stext>";
const f = document.getElementById("f");
f.addEventListener("load", () => { note(f.contentWindow, "frame"); window.ready = true; });
</script>`

// Texts a client inserts into password fields, and only those, are the client's password texts; asking
// the page changes nothing it can see.
func TestPasswordTexts(t *testing.T) {
	endpoint := startChromium(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, loginForm) }))
	t.Cleanup(srv.Close)
	m := startMux(t, nil, Config{Upstream: endpoint})
	ctx := testCtx(t)

	c := newClient(t, m, "task-pw")
	result[struct{}](t, c.call("Target.setDiscoverTargets", `{"discover":true}`, "")) // would see an attach flip
	tab := c.createTarget(srv.URL + "/login")
	s := c.attach(tab)
	result[struct{}](t, c.call("Runtime.enable", "", s)) // would see a world of the mux's own
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

	tests := []struct {
		name  string
		focus string // an expression that focuses the field
		text  string
		want  bool
	}{
		{"password field", `document.getElementById("pw").focus()`, "s3cret-pw", true},
		{"text field", `document.getElementById("user").focus()`, "plain-user", false},
		{"password field in a frame", `document.getElementById("f").contentDocument.getElementById("fpw").focus()`, "frame-pw", true},
		{"text field in a frame", `document.getElementById("f").contentDocument.getElementById("ftext").focus()`, "frame-text", false},
		{"password field in a shadow root", `document.getElementById("host").shadowRoot.getElementById("spw").focus()`, "shadow-pw", true},
		{"text field in a shadow root", `document.getElementById("host").shadowRoot.getElementById("stext").focus()`, "shadow-text", false},
	}
	var want []string
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eval(tt.focus)
			seen := string(eval("JSON.stringify([seen, document.visibilityState, innerWidth, innerHeight])"))
			events := len(c.all())
			result[struct{}](t, c.call("Input.insertText", fmt.Sprintf(`{"text":%q}`, tt.text), s))
			got := m.taps.PasswordTexts(ctx, "task-pw")
			if tt.want {
				want = append(want, tt.text)
			}
			if !slices.Equal(got, want) {
				t.Errorf("PasswordTexts after %q into the %s = %q; want %q", tt.text, tt.name, got, want)
			}
			if after := string(eval("JSON.stringify([seen, document.visibilityState, innerWidth, innerHeight])")); after != seen {
				t.Errorf("the page saw the check: before %s, after %s", seen, after)
			}
			for _, raw := range c.all()[events:] {
				var msg cdpMsg
				if json.Unmarshal(raw, &msg) == nil && msg.Method != "" {
					t.Errorf("the client heard of the check: %s", raw)
				}
			}
		})
	}

	t.Run("focus moved on before the check", func(t *testing.T) {
		// The client inserts a password and clicks the form's button at once (the click's focus sent the
		// moment the text's answer came, as a fast client's would; sent before it, Chrome may run the focus
		// before the text goes in, and then it puts both back on the password field): the check, which asks
		// once the text's answer came, finds focus on the button and the text in the password field.
		eval(`document.getElementById("pw").value = ""; document.getElementById("pw").focus()`)
		c.sendRaw(fmt.Sprintf(`{"id":7001,"method":"Input.insertText","params":{"text":"quick-pw"},"sessionId":%q}`, s))
		c.waitID("7001")
		c.sendRaw(fmt.Sprintf(`{"id":7002,"method":"Runtime.evaluate","params":{"expression":"document.getElementById('go').focus()"},"sessionId":%q}`, s))
		c.waitID("7002")
		got := m.taps.PasswordTexts(ctx, "task-pw")
		if !slices.Contains(got, "quick-pw") {
			t.Errorf("PasswordTexts = %q; want it to hold quick-pw", got)
		}
		if focused := string(eval("document.activeElement.id")); focused != `"go"` {
			t.Errorf("focus on %s after the check; want the button", focused)
		}
	})

	t.Run("the question after focus moved on", func(t *testing.T) {
		// The question as a check that came late asks it (a loaded machine: the client's next command ran
		// first), put to the page directly.
		ask := func(setup, text string) string {
			eval(`document.querySelectorAll("input").forEach((e) => e.value = "");
				document.getElementById("f").contentDocument.querySelectorAll("input").forEach((e) => e.value = "");
				document.getElementById("host").shadowRoot.querySelectorAll("input").forEach((e) => e.value = ""); ` + setup)
			return string(eval("(" + focusedPasswordJS + ")(" + strconv.Quote(text) + ")"))
		}
		for _, tt := range []struct {
			name, setup, text, want string
		}{
			{"focus on the next field, the text in the password field", `pw.value = "moved-on-pw"; user.focus()`, "moved-on-pw", "true"},
			{"focus on the button, the text in the shadow root's password field", `host.shadowRoot.getElementById("spw").value = "shadow-moved"; go.focus()`, "shadow-moved", "true"},
			{"focus on the next field, the text in the frame's password field", `f.contentDocument.getElementById("fpw").value = "frame-moved"; user.focus()`, "frame-moved", "true"},
			{"the text in the focused field, a password field holding it too", `user.value = "name"; pw.value = "xx-name-xx"; user.focus()`, "name", "false"},
			{"the text in no password field", `user.value = "plain"; go.focus()`, "plain", "false"},
		} {
			if got := ask(tt.setup, tt.text); got != tt.want {
				t.Errorf("%s: the question answered %s; want %s", tt.name, got, tt.want)
			}
		}
	})

	if got := m.taps.PasswordTexts(ctx, "nobody"); got != nil {
		t.Errorf("PasswordTexts of an unknown client = %q; want none", got)
	}
	for _, text := range m.taps.PasswordTexts(ctx, "task-pw") {
		if strings.Contains(text, "plain") || strings.Contains(text, "text") {
			t.Errorf("PasswordTexts holds %q, typed into a text field", text)
		}
	}
}

// waitEval waits for a page expression to be true.
func waitEval(t *testing.T, eval func(string) json.RawMessage, expr string) {
	t.Helper()
	for range 500 {
		if string(eval(expr)) == "true" {
			return
		}
	}
	t.Fatalf("%s never became true", expr)
}
