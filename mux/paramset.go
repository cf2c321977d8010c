package mux

import (
	"bytes"
	"fmt"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"vibebrowser/mux/cdpwire"
)

// paramSet is a judged command's params, decoded member by member. What the mux forwards for such a command
// is re-encoded from it (SPEC §20): every key written as the mux read it, every value a judge read written
// from the value it judged (or put in its place: a file's copy), the others as the strict read validated them.
type paramSet struct {
	members []member
}

type member struct {
	name  string
	raw   jsontext.Value // the value as received (strictly validated), or as a judge re-encoded it
	inner *paramSet      // set when a judge read into this member's object: encoded from it
}

// parseParams splits params, an object the strict read has validated, into its members.
func parseParams(params []byte) (*paramSet, error) {
	ps := &paramSet{}
	if params == nil {
		return ps, nil
	}
	d := jsontext.NewDecoder(bytes.NewReader(params))
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	for d.PeekKind() != '}' {
		tok, err := d.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String() // before the next read voids tok
		v, err := d.ReadValue()
		if err != nil {
			return nil, err
		}
		ps.members = append(ps.members, member{name: name, raw: v.Clone()})
	}
	return ps, nil
}

func (ps *paramSet) find(name string) *member {
	for i := range ps.members {
		if ps.members[i].name == name {
			return &ps.members[i]
		}
	}
	return nil
}

// has reports whether params carries name (null included).
func (ps *paramSet) has(name string) bool { return ps.find(name) != nil }

// read decodes member name into v, strictly (json v2: exact names, no duplicates), and from then on the
// member is forwarded as v re-encodes. It reports whether the member was there; a value of the wrong type is
// an error naming it.
func (ps *paramSet) read(name string, v any) (bool, error) {
	mb := ps.find(name)
	if mb == nil {
		return false, nil
	}
	if mb.raw.Kind() == 'n' {
		return true, nil // null stays null: v keeps its zero value, as Chromium reads an absent member
	}
	if err := json.Unmarshal(mb.raw, v); err != nil {
		return true, fmt.Errorf("params.%s: %w", name, err)
	}
	enc, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return true, fmt.Errorf("params.%s: %w", name, err)
	}
	mb.raw = enc
	return true, nil
}

// peek decodes member name into v like read, for what the mux itself acts on and never forwards: the
// member goes on as the strict read validated it.
func (ps *paramSet) peek(name string, v any) (bool, error) {
	mb := ps.find(name)
	if mb == nil || mb.raw.Kind() == 'n' {
		return mb != nil, nil
	}
	if err := json.Unmarshal(mb.raw, v); err != nil {
		return true, fmt.Errorf("params.%s: %w", name, err)
	}
	return true, nil
}

// str reads a string member; absent and null read as "".
func (ps *paramSet) str(name string) (string, error) {
	var s *string
	if _, err := ps.read(name, &s); err != nil || s == nil {
		return "", err
	}
	return *s, nil
}

// object returns member name's object, decoded member by member and re-encoded from it; nil when absent.
func (ps *paramSet) object(name string) (*paramSet, error) {
	mb := ps.find(name)
	if mb == nil || mb.raw.Kind() == 'n' {
		return nil, nil
	}
	if mb.inner != nil {
		return mb.inner, nil
	}
	if mb.raw.Kind() != '{' {
		return nil, fmt.Errorf("params.%s is a JSON %s, not an object", name, kindName(mb.raw.Kind()))
	}
	inner, err := parseParams(mb.raw)
	if err != nil {
		return nil, err
	}
	mb.inner = inner
	return inner, nil
}

// set replaces (or adds) member name with v's encoding.
func (ps *paramSet) set(name string, v any) error {
	enc, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return err
	}
	if mb := ps.find(name); mb != nil {
		mb.raw, mb.inner = enc, nil
		return nil
	}
	ps.members = append(ps.members, member{name: name, raw: enc})
	return nil
}

// appendTo appends the object re-encoded.
func (ps *paramSet) appendTo(b []byte) []byte {
	b = append(b, '{')
	for i, mb := range ps.members {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(b, mb.name)
		b = append(b, ':')
		if mb.inner != nil {
			b = mb.inner.appendTo(b)
		} else {
			b = append(b, mb.raw...)
		}
	}
	return append(b, '}')
}

// encodeCommand is the message the mux sends for a judged command: built from what the strict read and the
// judges decoded, never the client's bytes. Its id is at [idStart, idEnd) for the splice of the upstream id.
func encodeCommand(cmd *command, ps *paramSet) (b []byte, info cdpwire.Info) {
	b = make([]byte, 0, 64+len(cmd.method)+len(cmd.sessionID)+len(cmd.params))
	b = append(b, `{"id":`...)
	info.IDStart = len(b)
	b = append(b, cmd.id...)
	info.IDEnd = len(b)
	b = append(b, `,"method":`...)
	b, _ = jsontext.AppendQuote(b, cmd.method)
	if cmd.sessionID != "" {
		b = append(b, `,"sessionId":`...)
		b, _ = jsontext.AppendQuote(b, cmd.sessionID)
	}
	if ps != nil && (cmd.params != nil || len(ps.members) > 0) {
		b = append(b, `,"params":`...)
		b = ps.appendTo(b)
	}
	b = append(b, '}')
	info.Method, info.HasMethod, info.SessionID = cmd.method, true, cmd.sessionID
	return b, info
}

// decodeStrict decodes a message or result into v as json v2 reads it: names matched exactly, duplicates
// refused. Every read of a client's message goes through it or a paramSet, never encoding/json.
func decodeStrict(b []byte, v any) error { return json.Unmarshal(b, v) }
