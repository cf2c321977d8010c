package cdpwire

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Info is what routing needs of a CDP message: byte spans into the message, never a decoded copy. The hot
// path reads only these three top-level fields; params and results stay opaque bytes.
type Info struct {
	IDStart, IDEnd int // span of the id value; IDStart < 0 when there is none
	Method         string
	SessionID      string
	HasMethod      bool
}

// HasID reports whether the message has a top-level id.
func (i *Info) HasID() bool { return i.IDStart >= 0 }

// ID returns the top-level id's bytes in b, the message scanned, aliasing it; nil when there is none.
func (i *Info) ID(b []byte) []byte {
	if !i.HasID() {
		return nil
	}
	return b[i.IDStart:i.IDEnd]
}

var (
	errNotObject = errors.New("message is not a JSON object")
	errTruncated = errors.New("truncated JSON")
	errBadSyntax = errors.New("invalid JSON syntax")
)

// Scan reads the top-level id, method and sessionId of b, a message from Chrome. Chrome writes responses as
// {"id":N,... and events as {"method":"M","params":{...}[,"sessionId":"S"]}, so both are answered from the
// first bytes and the last bytes without walking a multi-megabyte result; anything else falls back to
// ScanCommand's walk. A response's sessionId is not read: it is not needed to route it.
func Scan(b []byte) (Info, error) {
	info := Info{IDStart: -1}
	if bytes.HasPrefix(b, []byte(`{"id":`)) {
		s := len(`{"id":`)
		e := s
		for e < len(b) && (b[e] >= '0' && b[e] <= '9' || b[e] == '-') {
			e++
		}
		if e > s && e < len(b) && (b[e] == ',' || b[e] == '}') {
			// A response: Chrome never puts "method" in one, and its sessionId is not needed to route it.
			info.IDStart, info.IDEnd = s, e
			return info, nil
		}
	}
	if bytes.HasPrefix(b, []byte(`{"method":"`)) {
		s := len(`{"method":"`)
		if q := bytes.IndexByte(b[s:], '"'); q > 0 && bytes.IndexByte(b[s:s+q], '\\') < 0 {
			info.Method, info.HasMethod = string(b[s:s+q]), true
			if sid, ok := tailSessionID(b); ok {
				info.SessionID = sid
				return info, nil
			}
			if bytes.HasSuffix(b, []byte(`}}`)) && !bytes.Contains(b[s+q:], []byte(`"sessionId"`)) {
				// No sessionId key anywhere after the method: a browser-level event.
				return info, nil
			}
		}
	}
	return ScanCommand(b)
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

// ScanCommand reads the same of b, any well-formed message (a command a client sends, which the keeper relays),
// in any key order: a walk of the top-level object that skips values without decoding them and does not
// validate what it skips (client messages are validated separately). On an error, what was read before it is
// returned with it: the id of a message cut short, when it came first.
func ScanCommand(b []byte) (Info, error) {
	info := Info{IDStart: -1}
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
			info.IDStart, info.IDEnd = vs, ve
		case "method":
			s, ok := decodeString(b[vs:ve])
			if !ok {
				return info, errBadSyntax
			}
			info.Method, info.HasMethod = s, true
		case "sessionId":
			s, ok := decodeString(b[vs:ve])
			if !ok {
				return info, errBadSyntax
			}
			info.SessionID = s
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

// IsInteger reports whether a JSON number token is an integer (no fraction, no exponent).
func IsInteger(tok []byte) bool {
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

// LooseID digs a readable integer id out of a message that failed to parse, so the error can be routed.
func LooseID(b []byte) []byte {
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
	if !IsInteger(b[i:j]) {
		return nil
	}
	return b[i:j]
}
