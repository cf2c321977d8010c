package mux

import "testing"

// TestScan: the exported scan reads the same three fields in Chrome's shapes and in any other key order.
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
		if err != nil || string(m.ID) != tc.id || m.Method != tc.method || m.SessionID != tc.session {
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
		if err != nil || string(m.ID) != tc.id || m.Method != tc.method || m.SessionID != tc.session {
			t.Errorf("ScanCommand(%s) = %+v, %v; want id %q method %q session %q", tc.msg, m, err, tc.id, tc.method, tc.session)
		}
	}
	m, err := ScanCommand([]byte(`{"id":8,"method":"DOM.setFileInputFiles","params":{"files":["/a`))
	if err == nil || string(m.ID) != "8" {
		t.Errorf("ScanCommand of a message cut short = %+v, %v; want an error and id 8", m, err)
	}
}
