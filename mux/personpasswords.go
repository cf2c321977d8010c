package mux

import (
	"context"
	"encoding/json"
	"strings"
)

// A person's passwords (issue 38; SPEC §15). What a person types or pastes into a password field of an
// agent's tab through the live view stays in the page, where the agent's next command can read it and print
// it into its call's output. So after each key the person presses and each paste, the view asks the page for
// the value of its focused password field, and the manager hides every such value from what it records of
// every client's calls on this browser (PasswordTexts), as it hides the agents' own insertText.
//
// While the person types, the field's value grows key by key: the view keeps the newest one as its pending
// text (a prefix of a password is not kept: hiding "pa" everywhere would hide too much), and keeps it for
// good when focus leaves the field, another field's value starts, or the view ends. Pending texts are hidden
// too, so a call that reads the field mid-word still has it hidden.

// personPasswords is the texts people typed into password fields of this browser's agents' tabs, guarded
// by Mux.mu.
type personPasswords struct {
	kept    passwords
	pending map[*View]string
}

// texts are the kept and pending texts.
func (p *personPasswords) texts() []string {
	out := append([]string(nil), p.kept.texts...)
	for _, t := range p.pending {
		out = append(out, t)
	}
	return out
}

// settleLocked keeps v's pending text for good.
func (p *personPasswords) settleLocked(v *View) {
	if t, ok := p.pending[v]; ok {
		p.kept.keep(t)
		delete(p.pending, v)
	}
}

// noteLocked records value, the focused password field's value after v's input ("" when focus is on no
// password field, or it is empty).
func (p *personPasswords) noteLocked(v *View, value string) {
	prev, ok := p.pending[v]
	switch {
	case value == "":
		p.settleLocked(v)
	case ok && (strings.HasPrefix(value, prev) || strings.HasPrefix(prev, value)):
		p.pending[v] = value // the same word typed on, or corrected
	default:
		p.settleLocked(v)
		if p.pending == nil {
			p.pending = map[*View]string{}
		}
		p.pending[v] = value
	}
}

// notePersonInput asks the view's page, after a person's input (a key down, a paste of pasted), what its
// focused password field holds now, and records it. An agent's tab only: a human tab is no agent's. It is
// best effort on the view's own session: an input the page cannot be asked about leaves what was kept.
func (v *View) notePersonInput(ctx context.Context, pasted string) {
	m := v.m
	m.mu.Lock()
	human, ended := v.human != nil, v.ended
	m.mu.Unlock()
	if human || ended {
		return
	}
	res, err := v.call(ctx, "Runtime.evaluate", map[string]any{
		"expression":    "(" + focusedPasswordValueJS + ")()",
		"returnByValue": true,
		"silent":        true,
	})
	var r struct {
		Result struct {
			Value *string `json:"value"`
		} `json:"result"`
	}
	if err != nil || json.Unmarshal(res, &r) != nil {
		return
	}
	value := ""
	if r.Result.Value != nil {
		value = *r.Result.Value
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if pasted != "" && r.Result.Value != nil {
		m.taps.personPw.kept.keep(pasted) // the paste itself, whatever else the field holds
	}
	m.taps.personPw.noteLocked(v, value)
}

// focusedPasswordValueJS follows document.activeElement through open shadow roots and same-origin frames,
// as focusedPasswordJS does, and answers the value of a focused <input type=password>, else null. It reads
// and changes nothing else.
const focusedPasswordValueJS = `() => {
	let el = document.activeElement;
	for (let i = 0; el && i < 64; i++) {
		if (el.shadowRoot && el.shadowRoot.activeElement) { el = el.shadowRoot.activeElement; continue; }
		if (el.localName === "iframe" || el.localName === "frame") {
			let doc = null;
			try { doc = el.contentDocument; } catch (e) {}
			if (!doc) return null;
			el = doc.activeElement;
			continue;
		}
		break;
	}
	return el && el.localName === "input" && el.type === "password" ? el.value : null;
}`
