package cdpwire

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"vibebrowser/integration/testkit"
)

// TestScan: Scan reads the same three fields in Chrome's shapes and in any other key order.
func TestScan(t *testing.T) {
	for _, tc := range []struct {
		msg, id, method, session string
	}{
		{`{"id":12,"result":{}}`, "12", "", ""},
		{`{"method":"Target.attachedToTarget","params":{"sessionId":"X"}}`, "", "Target.attachedToTarget", ""},
		{`{"method":"Page.loadEventFired","params":{},"sessionId":"S1"}`, "", "Page.loadEventFired", "S1"},
		{`{"params":{"id":9},"sessionId":"S2","method":"Runtime.evaluate","id":41}`, "41", "Runtime.evaluate", "S2"},
	} {
		m, err := Scan([]byte(tc.msg))
		if err != nil || string(m.ID([]byte(tc.msg))) != tc.id || m.Method != tc.method || m.SessionID != tc.session {
			t.Errorf("Scan(%s) = %+v, %v; want id %q method %q session %q", tc.msg, m, err, tc.id, tc.method, tc.session)
		}
	}
	if _, err := Scan([]byte(`[1]`)); err == nil {
		t.Error("Scan of a non-object = nil error")
	}
}

// TestScanCommand: a client's command in any key order, and the id of one cut short after it.
func TestScanCommand(t *testing.T) {
	for _, tc := range []struct {
		msg, id, method, session string
	}{
		{`{"method":"Target.attachToTarget","id":5,"params":{"targetId":"T"}}`, "5", "Target.attachToTarget", ""},
		{`{"id":6,"method":"Runtime.evaluate","params":{},"sessionId":"S"}`, "6", "Runtime.evaluate", "S"},
		{`{"sessionId":"S","params":{"method":"x"},"method":"Page.navigate","id":7}`, "7", "Page.navigate", "S"},
	} {
		m, err := ScanCommand([]byte(tc.msg))
		if err != nil || string(m.ID([]byte(tc.msg))) != tc.id || m.Method != tc.method || m.SessionID != tc.session {
			t.Errorf("ScanCommand(%s) = %+v, %v; want id %q method %q session %q", tc.msg, m, err, tc.id, tc.method, tc.session)
		}
	}
	cut := []byte(`{"id":8,"method":"DOM.setFileInputFiles","params":{"files":["/a`)
	m, err := ScanCommand(cut)
	if err == nil || string(m.ID(cut)) != "8" {
		t.Errorf("ScanCommand of a message cut short = %+v, %v; want an error and id 8", m, err)
	}
}

// FuzzScan checks the byte scanners against encoding/json on any well-formed object.
func FuzzScan(f *testing.F) {
	for _, s := range []string{
		`{"id":1,"result":{}}`,
		`{"method":"Network.dataReceived","params":{"a":"b"},"sessionId":"S1"}`,
		`{"method":"Target.attachedToTarget","params":{"sessionId":"X"}}`,
		`{"method":"A","params":{"x":",\"sessionId\":\"Z\"}"}}`,
		`{"method":"A","params":{},"sessionId":"a\"b"}`,
		`{"id":5,"method":"x","sessionId":"S"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var probe map[string]json.RawMessage
		if json.Unmarshal(data, &probe) != nil || !utf8.Valid(data) || testkit.HasDupKeys(data) {
			return
		}
		var method, sessionID *string
		for key, dst := range map[string]**string{"method": &method, "sessionId": &sessionID} {
			if raw, ok := probe[key]; ok {
				var s string
				if json.Unmarshal(raw, &s) != nil {
					return // not a string: not a CDP message
				}
				*dst = &s
			}
		}
		scanners := map[string]func([]byte) (Info, error){"ScanCommand": ScanCommand}
		if _, hasID := probe["id"]; !bytes.Contains(data, []byte(`\u`)) && (!hasID || method == nil) {
			// Scan reads Chrome's output, which never escapes a key and never sends a message
			// that is both a response and an event.
			scanners["Scan"] = Scan
		}
		for name, scan := range scanners {
			info, err := scan(data)
			if err != nil {
				t.Fatalf("%s(%q): %v", name, data, err)
			}
			if method != nil && (!info.HasMethod || info.Method != *method) {
				t.Fatalf("%s(%q) method %q; want %q", name, data, info.Method, *method)
			}
			if name == "Scan" && info.HasID() && !info.HasMethod {
				continue // a response: its sessionId is not read
			}
			want := ""
			if sessionID != nil {
				want = *sessionID
			}
			if info.SessionID != want {
				t.Fatalf("%s(%q) sessionId %q; want %q", name, data, info.SessionID, want)
			}
			if id, ok := probe["id"]; ok && (!info.HasID() || !bytes.Equal(bytes.TrimSpace(data[info.IDStart:info.IDEnd]), id)) {
				t.Fatalf("%s(%q) id span wrong; want %s", name, data, id)
			}
		}
	})
}
