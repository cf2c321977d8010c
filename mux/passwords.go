package mux

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Password texts (SPEC §15: text typed through Input.insertText into a password field is never stored).
// A client's insertText is forwarded as it came; once Chrome has answered it (the text is in the page: asked
// before, the question overtook the text on a loaded machine), off the command's path, a short-lived
// operator session asks the page whether its focused element is a password input, and such texts are kept
// for the client (PasswordTexts), for the manager to redact from what it records of the client's calls.
// Focus does not move through insertText, so asking after it is asking what the text went into; the
// milliseconds until the question are the client's to move focus in, which a check allows for (see
// focusedPasswordJS). Whatever cannot be told counts as a password: a text is better redacted than stored.
//
// The question runs in the page's own world, where the page's scripts could lie to it. An isolated world
// of the mux's own would not be lied to, but Chrome announces every new world to each session with Runtime
// enabled (measured on Chromium 156: the client's session got Runtime.executionContextCreated for it), and
// every client enables Runtime. Its one trace is the script Chrome compiles for it, which a client with the
// Debugger domain enabled hears of (Debugger.scriptParsed); the page itself sees nothing: no focus, blur,
// visibility or size change, no event at all.

const (
	// maxPasswordTexts and maxPasswordBytes bound a client's kept texts; past either the oldest go (the
	// newest text is always kept).
	maxPasswordTexts = 64
	maxPasswordBytes = 1 << 20
	// maxPasswordChecks bounds a client's checks in flight; a text past it counts without a check.
	maxPasswordChecks = 16
	// passwordCheckTimeout bounds one check; a check that ran out counts its text.
	passwordCheckTimeout = 5 * time.Second
	// maxValueSearch is the longest text that is looked for in password fields' values (focusedPasswordJS).
	maxValueSearch = 4 << 10
)

// passwords is a client's texts typed into password fields, guarded by Mux.mu.
type passwords struct {
	texts  []string
	bytes  int
	checks map[*passwordCheck]bool // in flight
	idle   chan struct{}           // closed when the last check in flight ends; nil while none runs
}

// passwordCheck is one insertText being checked.
type passwordCheck struct {
	text string
	page *target
	url  string // the page's URL when the text went in: a page that navigated since cannot be asked
}

// keep remembers text as a password field's.
func (p *passwords) keep(text string) {
	p.texts = append(p.texts, text)
	p.bytes += len(text)
	for len(p.texts) > 1 && (len(p.texts) > maxPasswordTexts || p.bytes > maxPasswordBytes) {
		p.bytes -= len(p.texts[0])
		p.texts[0] = ""
		p.texts = p.texts[1:]
	}
}

// checkPasswordLocked starts the check of a client's Input.insertText b on sess, which was just forwarded;
// the check asks the page once answered is closed (Chrome answered the insertText, or it failed).
func (tp *Taps) checkPasswordLocked(cl *client, sess *session, b []byte, answered <-chan struct{}) {
	m := tp.m
	var msg struct {
		Params struct {
			Text string `json:"text"`
		} `json:"params"`
	}
	if decodeStrict(b, &msg) != nil || msg.Params.Text == "" {
		return
	}
	p := &cl.pw
	page := sess.root
	if page != nil && page.typ == "tab" {
		page = page.page // puppeteer's tab session
	}
	if page == nil || page.typ != "page" || m.closed || len(p.checks) >= maxPasswordChecks {
		p.keep(msg.Params.Text) // no page to ask, or no asking now
		return
	}
	ck := &passwordCheck{text: msg.Params.Text, page: page, url: page.url}
	if p.checks == nil {
		p.checks = map[*passwordCheck]bool{}
	}
	if len(p.checks) == 0 {
		p.idle = make(chan struct{})
	}
	p.checks[ck] = true
	m.wg.Add(1) // under mu and before closed is set: Serve's Wait covers it
	go func() { defer m.wg.Done(); tp.runPasswordCheck(cl, ck, answered) }()
}

// runPasswordCheck asks ck's page, once answered is closed, and records the answer.
func (tp *Taps) runPasswordCheck(cl *client, ck *passwordCheck, answered <-chan struct{}) {
	m := tp.m
	ctx, cancel := context.WithTimeout(context.Background(), passwordCheckTimeout)
	defer cancel()
	var pw bool
	var err error
	select {
	case <-answered:
		pw, err = tp.focusedPassword(ctx, ck.page.id, ck.text)
	case <-ctx.Done():
		err = ctx.Err() // no answer in time: the text counts
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil || pw || m.targets[ck.page.id] != ck.page || ck.page.url != ck.url {
		cl.pw.keep(ck.text)
	}
	delete(cl.pw.checks, ck)
	if len(cl.pw.checks) == 0 {
		close(cl.pw.idle)
		cl.pw.idle = nil
	}
}

// PasswordTexts returns the texts client clientID typed through Input.insertText into a password field,
// and those people typed into password fields of this browser's agents' tabs (personpasswords.go), for
// the manager to redact from what it stores of the client's calls: the newest 64 (1 MiB at most), in
// the order their checks ended, a text that could not be checked included. It first waits, bounded by ctx,
// for the checks of the texts the client has sent; a text whose check has not ended when ctx does is
// returned too. A client the mux has forgotten (its grace period ended) has only the people's.
func (tp *Taps) PasswordTexts(ctx context.Context, clientID string) []string {
	m := tp.m
	m.mu.Lock()
	defer m.mu.Unlock()
	for {
		cl := m.clients[clientID]
		if cl == nil {
			return tp.personPw.texts()
		}
		idle := cl.pw.idle
		if idle == nil {
			return append(tp.personPw.texts(), cl.pw.texts...)
		}
		m.mu.Unlock()
		select {
		case <-idle:
			m.mu.Lock()
		case <-ctx.Done():
			m.mu.Lock()
			out := append(tp.personPw.texts(), cl.pw.texts...)
			for ck := range cl.pw.checks {
				out = append(out, ck.text)
			}
			return out
		}
	}
}

// focusedPassword reports whether the focused element of page targetID is a password input (see
// focusedPasswordJS), asked through an operator session that lives for the question only.
func (tp *Taps) focusedPassword(ctx context.Context, targetID, text string) (bool, error) {
	m := tp.m
	s, err := m.op.attach(ctx, targetID, nil)
	if err != nil {
		return false, err
	}
	defer m.op.closeSession(s)
	arg := []byte("null")
	if len(text) <= maxValueSearch {
		if arg, err = json.Marshal(text); err != nil {
			return false, err
		}
	}
	res, err := m.op.call(ctx, "Runtime.evaluate", map[string]any{
		"expression":    "(" + focusedPasswordJS + ")(" + string(arg) + ")",
		"returnByValue": true,
		"silent":        true, // no pause on an exception, nothing in the console
	}, s.id)
	if err != nil {
		return false, err
	}
	var r struct {
		Result struct {
			Value *bool `json:"value"`
		} `json:"result"`
		ExceptionDetails json.RawMessage `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return false, fmt.Errorf("mux: password check: %w", err)
	}
	if r.ExceptionDetails != nil || r.Result.Value == nil {
		return false, fmt.Errorf("mux: password check: no answer in %s", res)
	}
	return *r.Result.Value, nil
}

// focusedPasswordJS follows document.activeElement through open shadow roots and same-origin frames to
// the focused element and answers true for an <input type=password>, and for a frame of another origin
// (what is focused inside cannot be seen). The client may have moved focus on before the question came (a
// click on the form's button, a focus on the next field: on a loaded machine, the check runs after the
// client's next command): unless the focused element is a text field that holds the text (text: null, not
// looked for), a password field whose value holds it, in any document or open shadow root of the page
// (those of same-origin frames too), answers true. A page too big to search answers true. It reads and
// changes nothing else.
const focusedPasswordJS = `(text) => {
	let el = document.activeElement;
	for (let i = 0; el && i < 64; i++) {
		if (el.shadowRoot && el.shadowRoot.activeElement) {
			el = el.shadowRoot.activeElement;
			continue;
		}
		if (el.localName === "iframe" || el.localName === "frame") {
			let doc = null;
			try { doc = el.contentDocument; } catch (e) {}
			if (!doc) return true;
			el = doc.activeElement;
			continue;
		}
		break;
	}
	if (el && el.localName === "input" && el.type === "password") return true;
	if (text === null) return false;
	if (el) {
		const input = el.localName === "textarea" ||
			(el.localName === "input" && !/^(button|submit|reset|checkbox|radio|file|image|color|range|hidden)$/.test(el.type));
		if ((input && el.value.includes(text)) || (el.isContentEditable && (el.textContent || "").includes(text))) return false;
	}
	const roots = [document];
	let seen = 0;
	for (let i = 0; i < roots.length; i++) {
		for (const e of roots[i].querySelectorAll("*")) {
			if (++seen > 200000) return true;
			if (e.localName === "input" && e.type === "password" && e.value.includes(text)) return true;
			if (e.shadowRoot) roots.push(e.shadowRoot);
			if (e.localName === "iframe" || e.localName === "frame") {
				let doc = null;
				try { doc = e.contentDocument; } catch (err) {}
				if (doc) roots.push(doc);
			}
		}
	}
	return false;
}`
