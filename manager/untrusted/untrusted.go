// Package untrusted shows a person text that pages and agents wrote (titles, URLs, code, output, reasons,
// file names) so that none of it can act on what shows it: control, bidi and zero-width characters are
// escaped for terminals and marked, visibly, for HTML.
package untrusted

import (
	"bytes"
	"fmt"
	"html"
	"html/template"
	"strings"
	"unicode/utf8"
)

// Escaped reports whether r is shown as an escape: the C0 controls (newlines and tabs too: a line or a
// table cell stays one), DEL, the C1 controls, the bidi marks, embeddings, overrides and isolates, the line
// and paragraph separators, and the zero-width characters (spaces, joiners, the word joiner, the invisible
// operators, the byte order mark), which hide what stands beside them.
func Escaped(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, 0x80 <= r && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x180e, 0x200b <= r && r <= 0x200f, 0x2028 <= r && r <= 0x202e,
		0x2060 <= r && r <= 0x2064, 0x2066 <= r && r <= 0x2069, r == 0xfeff:
		return true
	}
	return false
}

// escape writes r, or the invalid byte b when r is RuneError of width 1, as the terminal's escape.
func escape(w *strings.Builder, s string, i int) int {
	r, n := utf8.DecodeRuneInString(s[i:])
	switch {
	case r == utf8.RuneError && n <= 1:
		fmt.Fprintf(w, `\x%02x`, s[i])
	case r == '\n':
		w.WriteString(`\n`)
	case r == '\t':
		w.WriteString(`\t`)
	case r == '\r':
		w.WriteString(`\r`)
	case r < 0x80 && Escaped(r):
		fmt.Fprintf(w, `\x%02x`, r)
	case Escaped(r):
		fmt.Fprintf(w, `\u%04x`, r)
	default:
		w.WriteString(s[i : i+n])
	}
	return n
}

// clean reports whether s has nothing to escape, where keep says which escaped runes stay as they are.
func clean(s string, keep func(rune) bool) bool {
	for _, r := range s {
		if r == utf8.RuneError || Escaped(r) && !keep(r) {
			return false
		}
	}
	return true
}

func none(rune) bool { return false }

// Terminal is s with each escaped rune as \n, \t, \r, \xHH (the others below U+0080) or \uHHHH, and each
// byte that is not UTF-8 as \xHH: ESC[2J prints as \x1b[2J, U+202E as \u202e.
func Terminal(s string) string {
	if clean(s, none) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		i += escape(&b, s, i)
	}
	return b.String()
}

// JSON is encoded JSON with the escaped runes encoding/json leaves as they are (the C1 controls, the bidi
// and zero-width ones) written as \uHHHH escapes: the same JSON to a reader, nothing a terminal acts on. The
// C0 ones it has already escaped, and invalid UTF-8 it has replaced.
func JSON(b []byte) []byte {
	inString := func(r rune) bool { return r >= 0x80 && Escaped(r) } // the C0 ones outside strings are its layout
	if !bytes.ContainsFunc(b, inString) {
		return b
	}
	var out bytes.Buffer
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if inString(r) {
			fmt.Fprintf(&out, `\u%04x`, r)
		} else {
			out.Write(b[:n])
		}
		b = b[n:]
	}
	return out.Bytes()
}

// layout are the escaped runes a block of lines (code, output) keeps as they are: its line breaks and tabs.
func layout(r rune) bool { return r == '\n' || r == '\t' }

// HTML is s escaped for HTML, with each escaped rune (but the line breaks and tabs of a block) shown as
// its terminal escape in a <span class="esc">: what an agent's code or a page's title hides is there to
// see, and nothing in it reorders what stands beside it. The page's CSS isolates the text as well.
func HTML(s string) template.HTML {
	if clean(s, layout) {
		return template.HTML(html.EscapeString(s))
	}
	var b, esc strings.Builder
	start := 0
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r != utf8.RuneError || n > 1) && (!Escaped(r) || layout(r)) {
			i += n
			continue
		}
		b.WriteString(html.EscapeString(s[start:i]))
		esc.Reset()
		i += escape(&esc, s, i)
		start = i
		b.WriteString(`<span class="esc" title="a hidden character the text holds">`)
		b.WriteString(html.EscapeString(esc.String()))
		b.WriteString(`</span>`)
	}
	b.WriteString(html.EscapeString(s[start:]))
	return template.HTML(b.String())
}
