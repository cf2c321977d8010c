package mux

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestStrictRead(t *testing.T) {
	tests := []struct {
		name, msg string
		why       string // "" = accepted; else a part of the refusal
	}{
		{"plain", `{"id":1,"method":"Page.navigate","sessionId":"S","params":{"url":"https://a.test/"}}`, ""},
		{"any key order", ` {"params":{"url":"x"} , "sessionId":"S","method":"Page.navigate","id":1} `, ""},
		{"escaped key", `{"id":1,"method":"Page.navigate","params":{"\u0075rl":"x"}}`, ""},
		{"unknown top-level key", `{"id":1,"method":"Page.enable","extra":{"a":[1,{"b":2}]}}`, ""},
		{"exact duplicate in params", `{"id":1,"method":"Page.navigate","params":{"url":"a","url":"b"}}`, `"url"`},
		{"duplicate by escape", `{"id":1,"method":"Page.navigate","params":{"url":"a","\u0075rl":"b"}}`, `"url"`},
		{"case duplicate in params", `{"id":1,"method":"Page.navigate","params":{"url":"file:///x","URL":"about:blank"}}`, `"URL" appears twice`},
		{"mixed-case duplicate", `{"id":1,"method":"Page.navigate","params":{"Url":"a","uRL":"b"}}`, `"uRL" appears twice`},
		{"Kelvin sign folds to k", "{\"id\":1,\"method\":\"X.y\",\"params\":{\"kind\":\"a\",\"\u212Aind\":\"b\"}}", "appears twice"},
		{"case duplicate method", `{"id":1,"method":"Runtime.evaluate","Method":"Page.navigate"}`, `"Method" appears twice`},
		{"case duplicate sessionId", `{"id":1,"method":"Page.enable","sessionId":"A","sessionid":"B"}`, `"sessionid" appears twice`},
		{"case duplicate id", `{"id":1,"ID":2,"method":"Page.enable"}`, `"ID" appears twice`},
		{"case duplicate deep", `{"id":1,"method":"Input.dispatchDragEvent","params":{"data":{"files":["a"],"FILES":["b"]}}}`, `"FILES" appears twice`},
		{"case duplicate in an array's object", `{"id":1,"method":"X.y","params":{"a":[{"k":1,"K":2}]}}`, `"K" appears twice`},
		{"same key in sibling objects", `{"id":1,"method":"X.y","params":{"a":{"k":1},"b":{"k":2},"K":3}}`, ""},
		{"case duplicate in a large object", `{"id":1,"method":"X.y","params":{"h":{` + manyKeys(40) + `,"K7":0}}}`, `"K7" appears twice`},
		{"trailing data", `{"id":1,"method":"Page.enable"}{"id":2,"method":"Browser.crash"}`, "more after"},
		{"non-object params", `{"id":1,"method":"Page.enable","params":[1]}`, "params is a JSON array"},
		{"string sessionId only", `{"id":1,"method":"Page.enable","sessionId":7}`, "sessionId is a JSON number"},
		{"string method only", `{"id":1,"method":["Page.enable"]}`, "method is a JSON array"},
		{"lone surrogate", `{"id":1,"method":"Page.navigate","params":{"url":"\ud800"}}`, "surrogate"},
		{"invalid UTF-8", "{\"id\":1,\"method\":\"Page.navigate\",\"params\":{\"url\":\"\xff\"}}", "UTF-8"},
		{"fraction id", `{"id":1.5,"method":"Page.enable"}`, "not an integer"},
	}
	var s strictReader
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.read([]byte(tt.msg))
			switch {
			case tt.why == "" && err != nil:
				t.Fatalf("read(%s) = %v; want it accepted", tt.msg, err)
			case tt.why != "" && (err == nil || !strings.Contains(err.Error(), tt.why)):
				t.Fatalf("read(%s) = %v; want a refusal saying %q", tt.msg, err, tt.why)
			}
		})
	}
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + string(rune('0'+i%10)) + strings.Repeat("x", i/10) + `":0`)
	}
	return b.String()
}

// judgedFields are the members of params the mux's judges read (judges.go), by path.
var judgedFields = [][]string{
	{"url"}, {"referrer"}, {"targetId"}, {"sessionId"}, {"browserContextId"}, {"files"}, {"data", "files"},
	{"flatten"}, {"discover"}, {"autoAttach"}, {"waitForDebuggerOnStart"}, {"proxyServer"}, {"proxyBypassList"},
	{"handle"}, {"entryId"},
}

// judgedType is a new value of the type a judge reads member name into.
func judgedType(name string) any {
	switch name {
	case "files":
		return new([]string)
	case "flatten", "discover", "autoAttach", "waitForDebuggerOnStart":
		return new(*bool)
	case "entryId":
		return new(*int)
	}
	return new(*string)
}

// caseSensitive reads msg as Chromium does: exact keys (encoding/json into maps keeps keys as they are).
func caseSensitive(msg []byte) (map[string]any, bool) {
	var v map[string]any
	d := json.NewDecoder(bytes.NewReader(msg))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil, false
	}
	return v, true
}

func dig(v map[string]any, path ...string) (any, bool) {
	var cur any = v
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[p]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// FuzzStrictAgreesWithChromium is SPEC §20's differential fuzz target: whatever message the strict read
// accepts, the top-level fields it routes on and every params field a judge reads are what a case-sensitive
// decoder (Chromium's reading) finds, in the client's bytes and in the bytes the mux re-encodes for Chromium;
// and a message it accepts has no key that a case-insensitive decoder could match instead.
func FuzzStrictAgreesWithChromium(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"method":"Page.navigate","sessionId":"S","params":{"url":"file:///etc/passwd","URL":"about:blank"}}`,
		`{"id":1,"method":"Page.navigate","params":{"URL":"file:///etc/passwd"}}`,
		`{"id":2,"method":"Target.closeTarget","params":{"targetId":"A","TargetId":"B"}}`,
		`{"id":3,"method":"DOM.setFileInputFiles","params":{"files":["/a"],"Files":["/b"],"nodeId":1}}`,
		`{"id":4,"method":"Input.dispatchDragEvent","params":{"type":"drop","data":{"files":["/a"],"items":[]}}}`,
		`{"id":5,"method":"Target.createBrowserContext","params":{"proxyServer":"http://x","ProxyServer":""}}`,
		`{"id":6,"method":"Page.navigate","params":{"\u0075rl":"x"},"sessionId":"S","SessionId":"T"}`,
		`{"id":7,"method":"IO.read","params":{"handle":"1"}}`,
		`{"id":8,"method":"Target.attachToTarget","params":{"targetId":"A","flatten":true}}`,
		`{"id":9,"method":"Page.navigate","params":{"url":null}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		var s strictReader
		cmd, err := s.read(msg)
		chrome, ok := caseSensitive(msg)
		if err != nil {
			return
		}
		if !ok {
			t.Fatalf("the strict read accepted %q, which is no JSON object", msg)
		}
		if got, _ := chrome["method"].(string); cmd.hasMethod && got != cmd.method {
			t.Fatalf("%q: method %q; Chromium reads %q", msg, cmd.method, got)
		}
		if got, _ := chrome["sessionId"].(string); got != cmd.sessionID {
			t.Fatalf("%q: sessionId %q; Chromium reads %q", msg, cmd.sessionID, got)
		}
		if k := foldedTwice(chrome); k != "" {
			t.Fatalf("the strict read accepted %q, where key %q has a twin in another case", msg, k)
		}
		if cmd.params == nil || cmd.id == nil || !cmd.hasMethod {
			return // handleClient answers these before any judge
		}
		k := &call{cmd: cmd}
		ps, err := k.params()
		if err != nil {
			t.Fatalf("%q: params accepted by the strict read but not splittable: %v", msg, err)
		}
		// Read every judged field as its judge does (judges.go), so it is re-encoded from that reading.
		for _, p := range judgedFields {
			ps := ps
			if len(p) == 2 {
				inner, err := ps.object(p[0])
				if err != nil {
					return // a judge answers invalid params
				}
				if inner == nil {
					continue
				}
				ps, p = inner, p[1:]
			}
			if _, err := ps.read(p[0], judgedType(p[0])); err != nil {
				return // a judge answers invalid params; nothing is forwarded
			}
		}
		out, info := encodeCommand(&k.cmd, k.ps)
		again, ok := caseSensitive(out)
		if !ok {
			t.Fatalf("%q re-encoded as %q, which is no JSON object", msg, out)
		}
		if string(out[info.IDStart:info.IDEnd]) != string(cmd.id) {
			t.Fatalf("%q re-encoded with id %s; want %s", msg, out[info.IDStart:info.IDEnd], cmd.id)
		}
		for _, p := range judgedFields {
			a, aok := dig(chrome, append([]string{"params"}, p...)...)
			b, bok := dig(again, append([]string{"params"}, p...)...)
			if aok != bok || !reflect.DeepEqual(normalize(a), normalize(b)) {
				t.Fatalf("%q: params.%s is %v in the client's message but %v in what the mux sends (%s)", msg, strings.Join(p, "."), a, b, out)
			}
		}
	})
}

// foldedTwice returns a key of v (at any level) that strings.EqualFold matches with another key of its object.
func foldedTwice(v any) string {
	switch x := v.(type) {
	case map[string]any:
		for a, e := range x {
			for b := range x {
				if a != b && strings.EqualFold(a, b) {
					return a
				}
			}
			if k := foldedTwice(e); k != "" {
				return k
			}
		}
	case []any:
		for _, e := range x {
			if k := foldedTwice(e); k != "" {
				return k
			}
		}
	}
	return ""
}

// normalize makes decoded numbers comparable across decoders: 1e2 and 100 are one number to Chromium.
func normalize(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, err := strconv.ParseFloat(x.String(), 64)
		if err != nil {
			return x.String()
		}
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			out[k] = normalize(e)
		}
		return out
	}
	return v
}
