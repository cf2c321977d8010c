package mux

import (
	"encoding/json"
	"strconv"
)

// CDP messages the mux writes itself (errors, results, events), built as bytes: a json.Marshal of a
// json.RawMessage would HTML-escape what it splices.

// CDP error codes the mux answers with.
const (
	codeParse        = -32700
	codeInvalid      = -32600
	codeInvalidParam = -32602
	codeInternal     = -32603
	codeServer       = -32000
	codeNoSession    = -32001
)

// errorFrame builds {"id":ID,"error":{...}[,"sessionId":S]}; a nil id leaves the id out (unroutable,
// as Chrome does for a message it cannot read).
func errorFrame(id []byte, sessionID string, code int, msg string) frame {
	b := make([]byte, 0, 96+len(msg))
	b = append(b, '{')
	if id != nil {
		b = append(b, `"id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, msg)
	b = append(b, '}')
	b = appendSession(b, sessionID)
	b = append(b, '}')
	return wholeFrame(b)
}

// resultFrame builds {"id":ID,"result":RESULT[,"sessionId":S]}.
func resultFrame(id []byte, sessionID string, result []byte) frame {
	b := make([]byte, 0, 32+len(id)+len(result))
	b = append(b, `{"id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = appendSession(b, sessionID)
	b = append(b, '}')
	return wholeFrame(b)
}

func appendSession(b []byte, sessionID string) []byte {
	if sessionID == "" {
		return b
	}
	b = append(b, `,"sessionId":`...)
	return appendJSONString(b, sessionID)
}

func eventFrame(method string, params []byte) frame {
	b := make([]byte, 0, 32+len(method)+len(params))
	b = append(b, `{"method":"`...)
	b = append(b, method...)
	b = append(b, `","params":`...)
	b = append(b, params...)
	b = append(b, '}')
	return wholeFrame(b)
}

// withSession puts a sessionId on an event the mux built or received without one.
func withSession(f frame, sid string) frame {
	if sid == "" {
		return f
	}
	b := append([]byte(nil), f.head[:len(f.head)-1]...)
	b = appendSession(b, sid)
	return wholeFrame(append(b, '}'))
}

func targetInfoParams(info []byte) []byte {
	b := make([]byte, 0, len(info)+16)
	b = append(b, `{"targetInfo":`...)
	b = append(b, info...)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string. Used only for text the mux writes itself (error messages,
// ids, paths), never to re-encode what a peer sent.
func appendJSONString(dst []byte, s string) []byte {
	enc, _ := json.Marshal(s)
	return append(dst, enc...)
}
