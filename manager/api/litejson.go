package api

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// A JSON reader and writer without reflection, for the few flat objects on the shim's fast path (its config,
// ensure, the call report): the shim is a new process on every agent call, and encoding/json's first use of
// a type (its field cache and the code that builds it) costs such a process about a millisecond per type.
// What they read and write is exactly what encoding/json reads and writes for the same types; the tests
// hold them to it.

// jsonReader reads one JSON text from data. It reads a string: the strings it returns without escapes to undo
// are slices of it, not copies (a shim's config and answers are a few strings each, and each copy was an
// allocation of its own).
type jsonReader struct {
	data  string
	pos   int
	depth int // of nested objects and arrays
}

// maxJSONDepth bounds nesting, as encoding/json does.
const maxJSONDepth = 10000

// nest enters an object or array.
func (r *jsonReader) nest() error {
	if r.depth++; r.depth > maxJSONDepth {
		return errors.New("exceeded max depth")
	}
	return nil
}

// errJSONEnd is a text cut short, as encoding/json's Decoder reports it.
var errJSONEnd = io.ErrUnexpectedEOF

func (r *jsonReader) syntax(what string) error {
	if r.pos >= len(r.data) {
		return errJSONEnd
	}
	return fmt.Errorf("invalid character %q %s (offset %d)", r.data[r.pos], what, r.pos)
}

func (r *jsonReader) space() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// peek is the next byte after white space, 0 at the end.
func (r *jsonReader) peek() byte {
	r.space()
	if r.pos >= len(r.data) {
		return 0
	}
	return r.data[r.pos]
}

// end checks that only white space is left.
func (r *jsonReader) end() error {
	if r.space(); r.pos < len(r.data) {
		return r.syntax("after the top-level value")
	}
	return nil
}

// literal consumes word (true, false, null) if it comes next.
func (r *jsonReader) literal(word string) bool {
	if r.peek() == word[0] && strings.HasPrefix(r.data[r.pos:], word) {
		r.pos += len(word)
		return true
	}
	return false
}

// object reads an object (or null, as none), calling field for each member with the reader on its value,
// which field must consume (readString, readInt, skip…).
func (r *jsonReader) object(field func(name string) error) error {
	if r.literal("null") {
		return nil
	}
	if r.peek() != '{' {
		return r.typeError("object")
	}
	if err := r.nest(); err != nil {
		return err
	}
	defer func() { r.depth-- }()
	r.pos++
	if r.peek() == '}' {
		r.pos++
		return nil
	}
	for {
		if r.peek() != '"' {
			return r.syntax("looking for beginning of object key string")
		}
		name, err := r.readString()
		if err != nil {
			return err
		}
		if r.peek() != ':' {
			return r.syntax("after object key")
		}
		r.pos++
		if err := field(name); err != nil {
			return err
		}
		switch r.peek() {
		case ',':
			r.pos++
		case '}':
			r.pos++
			return nil
		default:
			return r.syntax("after object key:value pair")
		}
	}
}

// typeError is a value of the wrong kind where want was expected; its syntax is checked first, as
// encoding/json reports a syntax error before a type error.
func (r *jsonReader) typeError(want string) error {
	start := r.pos
	if err := r.skip(); err != nil {
		return err
	}
	return fmt.Errorf("cannot unmarshal %s into a Go value of type %s", r.data[start:r.pos], want)
}

// stringField reads a string value into dst; null leaves dst as it is.
func (r *jsonReader) stringField(dst *string) error {
	if r.literal("null") {
		return nil
	}
	if r.peek() != '"' {
		return r.typeError("string")
	}
	s, err := r.readString()
	if err != nil {
		return err
	}
	*dst = s
	return nil
}

// intField reads an integer value into dst; null leaves dst as it is. A number with a fraction or an
// exponent, or one out of range, is a type error, as encoding/json has it.
func (r *jsonReader) intField(dst *int) error {
	if r.literal("null") {
		return nil
	}
	if c := r.peek(); c != '-' && (c < '0' || c > '9') {
		return r.typeError("int")
	}
	start := r.pos
	if err := r.number(); err != nil {
		return err
	}
	n, err := strconv.ParseInt(r.data[start:r.pos], 10, 0)
	if err != nil {
		return fmt.Errorf("cannot unmarshal number %s into a Go value of type int", r.data[start:r.pos])
	}
	*dst = int(n)
	return nil
}

// number consumes a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func (r *jsonReader) number() error {
	d := r.data
	if r.pos < len(d) && d[r.pos] == '-' {
		r.pos++
	}
	digits := func() error {
		start := r.pos
		for r.pos < len(d) && '0' <= d[r.pos] && d[r.pos] <= '9' {
			r.pos++
		}
		if r.pos == start {
			return r.syntax("in numeric literal")
		}
		return nil
	}
	if r.pos < len(d) && d[r.pos] == '0' {
		r.pos++
	} else if err := digits(); err != nil {
		return err
	}
	if r.pos < len(d) && d[r.pos] == '.' {
		r.pos++
		if err := digits(); err != nil {
			return err
		}
	}
	if r.pos < len(d) && (d[r.pos] == 'e' || d[r.pos] == 'E') {
		r.pos++
		if r.pos < len(d) && (d[r.pos] == '+' || d[r.pos] == '-') {
			r.pos++
		}
		if err := digits(); err != nil {
			return err
		}
	}
	return nil
}

// skip consumes any one value.
func (r *jsonReader) skip() error {
	switch c := r.peek(); {
	case c == '{':
		return r.object(func(string) error { return r.skip() })
	case c == '[':
		if err := r.nest(); err != nil {
			return err
		}
		defer func() { r.depth-- }()
		r.pos++
		if r.peek() == ']' {
			r.pos++
			return nil
		}
		for {
			if err := r.skip(); err != nil {
				return err
			}
			switch r.peek() {
			case ',':
				r.pos++
			case ']':
				r.pos++
				return nil
			default:
				return r.syntax("after array element")
			}
		}
	case c == '"':
		_, err := r.readString()
		return err
	case c == '-' || '0' <= c && c <= '9':
		return r.number()
	case r.literal("true"), r.literal("false"), r.literal("null"):
		return nil
	default:
		return r.syntax("looking for beginning of value")
	}
}

// readString reads a string at r.pos (a '"'), undoing its escapes. Invalid UTF-8 and unpaired surrogates
// become U+FFFD, as encoding/json decodes them.
func (r *jsonReader) readString() (string, error) {
	d := r.data
	i := r.pos + 1
	for i < len(d) { // the common case: nothing to undo
		c := d[i]
		if c == '"' {
			s := d[r.pos+1 : i]
			r.pos = i + 1
			return s, nil
		}
		if c == '\\' || c < ' ' || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	out := []byte(d[r.pos+1 : i])
	for {
		if i >= len(d) {
			r.pos = i
			return "", errJSONEnd
		}
		switch c := d[i]; {
		case c == '"':
			r.pos = i + 1
			return string(out), nil
		case c < ' ':
			r.pos = i
			return "", r.syntax("in string literal")
		case c < utf8.RuneSelf && c != '\\':
			out = append(out, c)
			i++
		case c >= utf8.RuneSelf:
			rn, size := utf8.DecodeRuneInString(d[i:])
			out = utf8.AppendRune(out, rn)
			i += size
		default: // a backslash
			if i+1 >= len(d) {
				r.pos = len(d)
				return "", errJSONEnd
			}
			esc := d[i+1]
			i += 2
			switch esc {
			case '"', '\\', '/':
				out = append(out, esc)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				rn, ok := hex4(d[i:])
				if !ok {
					r.pos = min(i, len(d))
					return "", r.syntax("in \\u hexadecimal character escape")
				}
				i += 4
				if 0xD800 <= rn && rn < 0xE000 { // a surrogate: a valid pair is one rune, else U+FFFD
					if lo, ok := hex4u(d[i:]); ok && rn < 0xDC00 && 0xDC00 <= lo && lo < 0xE000 {
						rn = 0x10000 + (rn-0xD800)<<10 + (lo - 0xDC00)
						i += 6
					} else {
						rn = utf8.RuneError
					}
				}
				out = utf8.AppendRune(out, rn)
			default:
				r.pos = i - 1
				return "", r.syntax("in string escape code")
			}
		}
	}
}

// hex4 reads four hex digits.
func hex4(b string) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var n rune
	for i := range 4 {
		c := b[i]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		n = n<<4 | rune(c)
	}
	return n, true
}

// hex4u reads a \uXXXX escape.
func hex4u(b string) (rune, bool) {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return 0, false
	}
	return hex4(b[2:])
}

// jsonWriter appends one JSON object to b, member by member.
type jsonWriter struct {
	b    []byte
	more bool // a member was written
}

func (w *jsonWriter) key(name string) {
	if w.more {
		w.b = append(w.b, ',')
	} else {
		w.b = append(w.b, '{')
	}
	w.more = true
	w.b = append(w.b, '"')
	w.b = append(w.b, name...)
	w.b = append(w.b, '"', ':')
}

func (w *jsonWriter) str(name, v string) {
	w.key(name)
	w.b = appendJSONString(w.b, v)
}

// strOmit writes a string unless it is empty (omitempty).
func (w *jsonWriter) strOmit(name, v string) {
	if v != "" {
		w.str(name, v)
	}
}

func (w *jsonWriter) int(name string, v int) {
	w.key(name)
	w.b = strconv.AppendInt(w.b, int64(v), 10)
}

func (w *jsonWriter) intOmit(name string, v int) {
	if v != 0 {
		w.int(name, v)
	}
}

func (w *jsonWriter) trueOmit(name string, v bool) {
	if v {
		w.key(name)
		w.b = append(w.b, "true"...)
	}
}

// strsOmit writes a list of strings unless it is empty.
func (w *jsonWriter) strsOmit(name string, v []string) {
	if len(v) == 0 {
		return
	}
	w.key(name)
	for i, s := range v {
		if i == 0 {
			w.b = append(w.b, '[')
		} else {
			w.b = append(w.b, ',')
		}
		w.b = appendJSONString(w.b, s)
	}
	w.b = append(w.b, ']')
}

// close ends the object and returns it.
func (w *jsonWriter) close() []byte {
	if !w.more {
		w.b = append(w.b, '{')
	}
	return append(w.b, '}')
}

// appendJSONString appends s quoted as encoding/json quotes it: HTML-safe, U+2028 and U+2029 escaped, and
// each byte of invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= ' ' && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		rn, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case rn == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case rn == '\u2028' || rn == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[rn&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
