//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// checkLogLines fails t for every line of a daemon's log that is not one JSON object whose keys, at every
// level, are unique: log pipelines read duplicate keys differently (first wins, last wins, or an error).
func checkLogLines(t testing.TB, log string) {
	t.Helper()
	bad := 0
	for i, line := range strings.Split(strings.TrimRight(log, "\n"), "\n") {
		if line == "" {
			continue
		}
		if err := uniqueKeyObject(line); err != nil {
			bad++
			if bad <= 5 {
				t.Errorf("log line %d is not a JSON object with unique keys (%v): %s", i+1, err, line)
			}
		}
	}
	if bad > 5 {
		t.Errorf("%d log lines in all are not JSON objects with unique keys", bad)
	}
}

// uniqueKeyObject checks that line is exactly one JSON object with no key repeated in any object.
func uniqueKeyObject(line string) error {
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("starts with %v, not an object", tok)
	}
	if err := uniqueKeys(dec); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the object")
	}
	if _, err := dec.Token(); err == nil {
		return fmt.Errorf("trailing data after the object")
	}
	return nil
}

// uniqueKeys reads the rest of an object whose '{' was read, recursing into nested values.
func uniqueKeys(dec *json.Decoder) error {
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key := tok.(string)
		if seen[key] {
			return fmt.Errorf("key %q twice", key)
		}
		seen[key] = true
		if err := skipValue(dec); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

// skipValue reads one value, checking the objects inside it.
func skipValue(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return uniqueKeys(dec)
	case json.Delim('['):
		for dec.More() {
			if err := skipValue(dec); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}

func TestLogCheckerRefusesWhatPipelinesMisread(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line string
		ok   bool
	}{
		{`{"level":"info","component":"mux","browser":"_web","message":"browser connected"}`, true},
		{`{"a":{"b":1,"c":[{"d":1},{"d":2}]}}`, true},
		{`{"level":"info","component":"manager","component":"mux","message":"x"}`, false},
		{`{"a":{"b":1,"b":2}}`, false},
		{`{"a":[{"d":1,"d":1}]}`, false},
		{`starting the manager`, false},
		{`["not","an","object"]`, false},
		{`{"a":1}{"b":2}`, false},
	}
	for _, tt := range tests {
		if err := uniqueKeyObject(tt.line); (err == nil) != tt.ok {
			t.Errorf("uniqueKeyObject(%s) = %v; want ok=%v", tt.line, err, tt.ok)
		}
	}
	var buf bytes.Buffer
	buf.WriteString(tests[0].line + "\n")
	rec := &recordingTB{TB: t}
	checkLogLines(rec, buf.String()+tests[2].line+"\n")
	if rec.errors != 1 {
		t.Errorf("checkLogLines on one bad line reported %d errors; want 1", rec.errors)
	}
}

// recordingTB counts Errorf calls instead of failing.
type recordingTB struct {
	testing.TB
	errors int
}

func (r *recordingTB) Helper()               {}
func (r *recordingTB) Errorf(string, ...any) { r.errors++ }

// wantNoRefusals fails t for every call a client sent that the mux's table of methods refused (its "call
// refused" log lines): real clients must pass the table (SPEC §20), and the log names each method they sent
// that it refused.
func wantNoRefusals(t testing.TB, log string) {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"call refused"`) {
			continue
		}
		var l struct{ Method, Client, Detail string }
		json.Unmarshal([]byte(line), &l)
		t.Errorf("the mux refused %s from real client %s (%s): the table must pass what real clients send", l.Method, l.Client, l.Detail)
	}
}
