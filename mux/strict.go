package mux

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"vibebrowser/mux/cdpwire"
)

// One parse, one truth (SPEC §20): a client's message is read once, strictly, and what the mux judged is
// what Chromium acts on. Chromium reads keys exactly; Go's encoding/json matched them in any case and kept
// the last duplicate, so {"url":"file://…","URL":"about:blank"} was judged harmless and opened a file. The
// reader is jsontext, strict by design (exact names, duplicates refused, invalid UTF-8 and lone surrogates
// refused, one value per message), and the mux adds one rule it lacks: a key may not appear twice at any
// level in another case either, so no decoder of ours or of a client's can read another key than Chromium.

// strictRule is the rule a message that fails the strict read breaks; every such refusal names it.
const strictRule = "a client's message must be one JSON object whose keys appear once at every level, " +
	"in one case only (they match exactly, as Chromium reads them), with an integer id, a string method, " +
	"a string sessionId if any, and an object params if any"

// maxFoldScan is how many keys of one object are compared pairwise; a larger object is checked through a map.
const maxFoldScan = 16

// command is a client's message as the strict read saw it. Its fields alias the message's bytes.
type command struct {
	id        []byte // the integer id's bytes
	method    string
	sessionID string
	hasMethod bool
	params    []byte // the params object's bytes, nil when there is none
	// idStart and idEnd span the id in the message, where the mux splices its own id.
	idStart, idEnd int
}

// strictReader reads one client's messages; it is its reader goroutine's and reuses its buffers.
type strictReader struct {
	dec   *jsontext.Decoder
	r     bytes.Reader
	names []keySet // per open object, the keys seen so far (reused between messages)
	msg   []byte   // the message being read: keys alias it
	depth int
}

// errStrict is a message that broke strictRule; its text names what broke it. parse marks a message that
// is no JSON object at all (Chrome's -32700), the rest are invalid requests (-32600).
type errStrict struct {
	what  string
	parse bool
}

func (e *errStrict) Error() string { return e.what }

func strictErr(format string, args ...any) error {
	return &errStrict{what: fmt.Sprintf(format, args...)}
}

// read parses b strictly. On an error, cmd holds what was read before it (an id that came first routes the
// error back).
func (s *strictReader) read(b []byte) (cmd command, err error) {
	cmd.idStart = -1
	s.msg = b
	s.r.Reset(b)
	if s.dec == nil {
		s.dec = jsontext.NewDecoder(&s.r)
	} else {
		s.dec.Reset(&s.r)
	}
	s.depth = 0
	d := s.dec
	tok, err := d.ReadToken()
	if err != nil {
		return cmd, syntaxErr(err)
	}
	if tok.Kind() != '{' {
		return cmd, &errStrict{what: "the message is a JSON " + kindName(tok.Kind()) + ", not an object", parse: true}
	}
	s.push()
	for d.PeekKind() != '}' {
		name, err := s.name()
		if err != nil {
			return cmd, err
		}
		switch string(name) {
		case "id":
			v, err := d.ReadValue()
			if err != nil {
				return cmd, syntaxErr(err)
			}
			end := int(d.InputOffset())
			cmd.idStart, cmd.idEnd = end-len(v), end
			cmd.id = b[cmd.idStart:cmd.idEnd] // echoed with an error even when it is no integer, to route it
			if v.Kind() != '0' || !cdpwire.IsInteger(v) {
				return cmd, strictErr("id %s is not an integer", v)
			}
		case "method", "sessionId":
			v, err := d.ReadValue()
			if err != nil {
				return cmd, syntaxErr(err)
			}
			if v.Kind() != '"' {
				return cmd, strictErr("%s is a JSON %s, not a string", name, kindName(v.Kind()))
			}
			str, err := unquote(v)
			if err != nil {
				return cmd, syntaxErr(err)
			}
			if string(name) == "method" {
				cmd.method, cmd.hasMethod = str, true
			} else {
				cmd.sessionID = str
			}
		case "params":
			if k := d.PeekKind(); k != '{' {
				if k == 0 {
					_, err := d.ReadToken()
					return cmd, syntaxErr(err)
				}
				return cmd, strictErr("params is a JSON %s, not an object", kindName(k))
			}
			start := int(d.InputOffset())
			if err := s.walk(); err != nil {
				return cmd, err
			}
			end := int(d.InputOffset())
			cmd.params = bytes.TrimLeft(b[start:end], " \t\r\n:")
		default:
			if err := s.walk(); err != nil {
				return cmd, err
			}
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return cmd, syntaxErr(err)
	}
	s.pop()
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			return cmd, strictErr("there is more after the message's object")
		}
		return cmd, syntaxErr(err)
	}
	return cmd, nil
}

// walk reads the next value, checking every object's keys on the way.
func (s *strictReader) walk() error {
	d := s.dec
	switch d.PeekKind() {
	case '{':
		d.ReadToken()
		s.push()
		for d.PeekKind() != '}' {
			if _, err := s.name(); err != nil {
				return err
			}
			if err := s.walk(); err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return syntaxErr(err)
		}
		s.pop()
	case '[':
		d.ReadToken()
		for d.PeekKind() != ']' {
			if err := s.walk(); err != nil {
				return err
			}
		}
		if _, err := d.ReadToken(); err != nil {
			return syntaxErr(err)
		}
	default:
		if _, err := d.ReadValue(); err != nil {
			return syntaxErr(err)
		}
	}
	return nil
}

// name reads an object's next key and refuses one that repeats a key of the same object in another case
// (jsontext refuses exact repeats itself). The key is returned as bytes of the message itself (decoded when
// it has escapes), so the common key costs no allocation.
func (s *strictReader) name() ([]byte, error) {
	v, err := s.dec.ReadValue()
	if err != nil {
		return nil, syntaxErr(err)
	}
	end := int(s.dec.InputOffset())
	raw := s.msg[end-len(v) : end]
	name := raw[1 : len(raw)-1]
	if bytes.IndexByte(raw, '\\') >= 0 {
		if name, err = jsontext.AppendUnquote(nil, raw); err != nil {
			return nil, syntaxErr(err)
		}
	}
	if !s.names[s.depth-1].add(name) {
		return nil, strictErr("key %q appears twice at %s, in another case", name, s.dec.StackPointer().Parent())
	}
	return name, nil
}

// keySet is one open object's keys: a short list compared in turn (bytes.EqualFold: Unicode simple folding),
// and a map of folded keys once the object is large (headers, say), so a hostile object of many keys costs
// one lookup per key.
type keySet struct {
	list [][]byte
	set  map[string]struct{}
}

// add records key and reports whether no key of the object equals it in any case.
func (k *keySet) add(key []byte) bool {
	if k.set != nil {
		f := foldKey(string(key))
		if _, dup := k.set[f]; dup {
			return false
		}
		k.set[f] = struct{}{}
		return true
	}
	for _, o := range k.list {
		if bytes.EqualFold(o, key) {
			return false
		}
	}
	k.list = append(k.list, key)
	if len(k.list) == maxFoldScan {
		k.set = make(map[string]struct{}, 4*maxFoldScan)
		for _, o := range k.list {
			k.set[foldKey(string(o))] = struct{}{}
		}
	}
	return true
}

func (s *strictReader) push() {
	if s.depth == len(s.names) {
		s.names = append(s.names, keySet{})
	}
	k := &s.names[s.depth]
	k.list, k.set = k.list[:0], nil
	s.depth++
}

func (s *strictReader) pop() { s.depth-- }

// foldKey maps name to one spelling per case-insensitive class (Unicode simple folding, as strings.EqualFold):
// ASCII letters to lower case, every other letter to the ASCII letter of its class if it has one (the Kelvin
// sign is k), else to the largest rune of its class. A key of lower-case ASCII is returned as it is.
func foldKey(name string) string {
	plain := true
	for i := 0; i < len(name); i++ {
		if c := name[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			plain = false
			break
		}
	}
	if plain {
		return name
	}
	return strings.Map(foldRune, name)
}

func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return unicode.ToLower(r)
	}
	best := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return unicode.ToLower(f)
		}
		best = max(best, f)
	}
	return best
}

// unquote is the value of a JSON string token; jsontext has validated it.
func unquote(v jsontext.Value) (string, error) {
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err
}

// syntaxErr is a jsontext error as a strict refusal.
func syntaxErr(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &errStrict{what: "the message ends before its object does", parse: true}
	}
	var se *jsontext.SyntacticError
	return &errStrict{what: strings.TrimPrefix(err.Error(), "jsontext: "), parse: errors.As(err, &se) && !isDuplicate(err)}
}

func kindName(k jsontext.Kind) string {
	switch k {
	case 'n':
		return "null"
	case 'f', 't':
		return "boolean"
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	}
	return "value"
}

// isDuplicate reports whether err is jsontext's refusal of an exact duplicate key: a request that breaks the
// strict rule, not a message that fails to parse.
func isDuplicate(err error) bool { return errors.Is(err, jsontext.ErrDuplicateName) }
