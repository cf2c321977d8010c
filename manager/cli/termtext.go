package cli

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Terminal text (issue 37): what an agent wrote (its code and output, a handoff's reason, a report's
// message) and what its pages named (titles, URLs, file names) reach the person's terminal with every
// control character as a visible escape, so none of it can clear the screen, move the cursor, retitle the
// window or reorder a line. Every command that prints such text prints it through safeText (tables and
// lines) or safeJSON (--json).

// escaped reports whether r is printed as an escape: the C0 controls (newlines and tabs too: a line or a
// table cell stays one), DEL, the C1 controls, the bidi marks, embeddings, overrides and isolates, and the
// line and paragraph separators.
func escaped(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, 0x80 <= r && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, 0x2028 <= r && r <= 0x202e, 0x2066 <= r && r <= 0x2069:
		return true
	}
	return false
}

// safeText is s with each escaped rune as \n, \t, \r, \xHH (the others below U+0080) or \uHHHH, and each
// byte that is not UTF-8 as \xHH: ESC[2J prints as \x1b[2J, U+202E as \u202e.
func safeText(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || escaped(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80 && escaped(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case escaped(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// safeJSON is encoded JSON with the escaped runes encoding/json leaves as they are (the C1 controls and
// the bidi ones) written as \uHHHH escapes: the same JSON to a reader, nothing a terminal acts on. The C0
// ones it has already escaped, and invalid UTF-8 it has replaced.
func safeJSON(b []byte) []byte {
	inString := func(r rune) bool { return r >= 0x80 && escaped(r) } // the C0 ones outside strings are its layout
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
