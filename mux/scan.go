package mux

import (
	"bytes"
	"encoding/json"
	"errors"
)

// msgInfo is what the router needs from a CDP message: byte spans into the message, never a decoded copy.
// The hot path reads only these three top-level fields; params and results stay opaque bytes.
type msgInfo struct {
	idStart, idEnd int // span of the id value; idStart < 0 when there is no id
	method         string
	sessionID      string
	hasMethod      bool
}

func (i *msgInfo) hasID() bool { return i.idStart >= 0 }

var (
	errNotObject = errors.New("message is not a JSON object")
	errTruncated = errors.New("truncated JSON")
	errBadSyntax = errors.New("invalid JSON syntax")
)

// scanUpstream reads Chrome's messages. Chrome writes responses as {"id":N,... and events as
// {"method":"M","params":{...}[,"sessionId":"S"]}, so both are answered from the first bytes and the last
// bytes without walking a multi-megabyte result; anything else falls back to the full scan.
func scanUpstream(b []byte) (msgInfo, error) {
	info := msgInfo{idStart: -1}
	if bytes.HasPrefix(b, []byte(`{"id":`)) {
		s := len(`{"id":`)
		e := s
		for e < len(b) && (b[e] >= '0' && b[e] <= '9' || b[e] == '-') {
			e++
		}
		if e > s && e < len(b) && (b[e] == ',' || b[e] == '}') {
			// A response: Chrome never puts "method" in one, and its sessionId is not needed to route it.
			info.idStart, info.idEnd = s, e
			return info, nil
		}
	}
	if bytes.HasPrefix(b, []byte(`{"method":"`)) {
		s := len(`{"method":"`)
		if q := bytes.IndexByte(b[s:], '"'); q > 0 && bytes.IndexByte(b[s:s+q], '\\') < 0 {
			info.method, info.hasMethod = string(b[s:s+q]), true
			if sid, ok := tailSessionID(b); ok {
				info.sessionID = sid
				return info, nil
			}
			if bytes.HasSuffix(b, []byte(`}}`)) && !bytes.Contains(b[s+q:], []byte(`"sessionId"`)) {
				// No sessionId key anywhere after the method: a browser-level event.
				return info, nil
			}
		}
	}
	return scanFull(b)
}

// tailSessionID recognises a message ending in ,"sessionId":"S"} where S has no quote or backslash. The
// final } must close the top-level object of valid JSON, and the unescaped quotes make "sessionId" a key
// of that object, so the match cannot come from inside a nested value or a string.
func tailSessionID(b []byte) (string, bool) {
	n := len(b)
	if n < 16 || b[n-1] != '}' || b[n-2] != '"' {
		return "", false
	}
	end := n - 2
	start := bytes.LastIndexByte(b[:end], '"')
	if start < 0 {
		return "", false
	}
	val := b[start+1 : end]
	if bytes.IndexByte(val, '\\') >= 0 {
		return "", false
	}
	const key = `,"sessionId":`
	if start < len(key) || string(b[start-len(key):start]) != key {
		return "", false
	}
	return string(val), true
}

// scanFull walks the top-level object of any well-formed message in any key order. It skips values
// without decoding them and does not validate what it skips; client messages are validated separately.
func scanFull(b []byte) (msgInfo, error) {
	info := msgInfo{idStart: -1}
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return info, errNotObject
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return info, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return info, errBadSyntax
		}
		ks := i
		ke, err := skipString(b, i)
		if err != nil {
			return info, err
		}
		key := b[ks+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			k, ok := decodeString(b[ks:ke])
			if !ok {
				return info, errBadSyntax
			}
			key = []byte(k)
		}
		i = skipWS(b, ke)
		if i >= len(b) || b[i] != ':' {
			return info, errBadSyntax
		}
		vs := skipWS(b, i+1)
		ve, err := skipValue(b, vs)
		if err != nil {
			return info, err
		}
		switch string(key) {
		case "id":
			info.idStart, info.idEnd = vs, ve
		case "method":
			s, ok := decodeString(b[vs:ve])
			if !ok {
				return info, errBadSyntax
			}
			info.method, info.hasMethod = s, true
		case "sessionId":
			s, ok := decodeString(b[vs:ve])
			if !ok {
				return info, errBadSyntax
			}
			info.sessionID = s
		}
		i = skipWS(b, ve)
		if i >= len(b) {
			return info, errTruncated
		}
		if b[i] == '}' {
			return info, nil
		}
		if b[i] != ',' {
			return info, errBadSyntax
		}
		i = skipWS(b, i+1)
	}
}

// decodeString returns the value of a JSON string token, decoding escapes only when there are any.
func decodeString(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), true
	}
	var s string
	if err := json.Unmarshal(tok, &s); err != nil {
		return "", false
	}
	return s, true
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, error) {
	i++
	for {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return 0, errTruncated
		}
		j := i + q
		bs := 0
		for k := j - 1; k >= i && b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return j + 1, nil
		}
		i = j + 1
	}
}

// skipValue returns the index just past the JSON value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errTruncated
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, errTruncated
	default:
		j := i
		for j < len(b) {
			c := b[j]
			if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r' {
				break
			}
			j++
		}
		if j == i {
			return 0, errBadSyntax
		}
		return j, nil
	}
}

// isInteger reports whether a JSON number token is an integer (no fraction, no exponent).
func isInteger(tok []byte) bool {
	if len(tok) > 0 && tok[0] == '-' {
		tok = tok[1:]
	}
	if len(tok) == 0 || len(tok) > 1 && tok[0] == '0' {
		return false // JSON allows no leading zero
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// looseID digs a readable integer id out of a message that failed to parse, so the error can be routed.
func looseID(b []byte) []byte {
	k := bytes.Index(b, []byte(`"id"`))
	if k < 0 {
		return nil
	}
	i := skipWS(b, k+4)
	if i >= len(b) || b[i] != ':' {
		return nil
	}
	i = skipWS(b, i+1)
	j := i
	if j < len(b) && b[j] == '-' {
		j++
	}
	for j < len(b) && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if !isInteger(b[i:j]) {
		return nil
	}
	return b[i:j]
}

// appendJSONString appends s as a JSON string. Used only for text the mux writes itself (error messages,
// ids, paths), never to re-encode what a peer sent.
func appendJSONString(dst []byte, s string) []byte {
	enc, _ := json.Marshal(s)
	return append(dst, enc...)
}

// Message is what a relay of CDP messages needs of one without decoding it (the keeper, SPEC §13).
type Message struct {
	ID        []byte // the top-level id's bytes, aliasing the message; nil when there is none
	Method    string // empty when there is none
	SessionID string
}

// Scan reads the top-level id, method and sessionId of b, a message from Chrome, with the mux's own scanner:
// Chrome's shapes from their first and last bytes, anything else by a walk that skips values undecoded.
func Scan(b []byte) (Message, error) {
	info, err := scanUpstream(b)
	if err != nil {
		return Message{}, err
	}
	return info.message(b), nil
}

// ScanCommand reads the same of b, a command the mux sends its browser (the keeper relays it), in any key order (a
// walk that skips values undecoded). On an error, what was read before it is returned with it: the id of a message cut
// short, when it came first.
func ScanCommand(b []byte) (Message, error) {
	info, err := scanFull(b)
	return info.message(b), err
}

func (i *msgInfo) message(b []byte) Message {
	m := Message{Method: i.method, SessionID: i.sessionID}
	if i.hasID() {
		m.ID = b[i.idStart:i.idEnd]
	}
	return m
}
