package api

import (
	"fmt"
	"strings"
	"time"
)

// The JSON the shim sends and reads on every call, written out by hand (litejson.go): ensure's request and
// answer, and the call report. Each is byte for byte (or, read, value for value) what encoding/json makes
// of the same struct; the tests compare them.

// appendJSON appends the request as encoding/json encodes it.
func (q *EnsureRequest) appendJSON(b []byte) []byte {
	w := jsonWriter{b: b}
	w.str("kind", q.Kind)
	w.strOmit("store_id", q.StoreID)
	w.str("client_id", q.ClientID)
	w.str("bu_name", q.BUName)
	w.strOmit("task_id", q.TaskID)
	w.strOmit("via", q.Via)
	return w.close()
}

// decode reads ensure's answer; a field it does not know is skipped, as encoding/json skips it.
func (a *EnsureResponse) decode(data []byte) error {
	r := &jsonReader{data: string(data)}
	err := r.object(func(name string) error {
		switch { // encoding/json matches a name that differs only in case, and these differ in more
		case strings.EqualFold(name, "cdp_ws"):
			return r.stringField(&a.CDPWS)
		case strings.EqualFold(name, "download_dir"):
			return r.stringField(&a.DownloadDir)
		case strings.EqualFold(name, "lease_s"):
			return r.intField(&a.LeaseS)
		case strings.EqualFold(name, "timeline"):
			return r.stringField(&a.Timeline)
		}
		return r.skip()
	})
	if err != nil {
		return err
	}
	return r.end()
}

// appendJSON appends the report as encoding/json encodes it.
func (c *CallReport) appendJSON(b []byte) ([]byte, error) {
	w := jsonWriter{b: b}
	w.str("client", c.Client)
	w.str("session", c.Session)
	w.intOmit("slot", c.Slot)
	w.strOmit("tool", c.Tool)
	w.strsOmit("args", c.Args)
	w.trueOmit("args_cut", c.ArgsCut)
	for _, t := range []struct {
		name string
		at   time.Time
	}{{"start", c.Start}, {"end", c.End}} {
		if y := t.at.Year(); y < 0 || y > 9999 {
			return nil, fmt.Errorf("encode call report: %s year %d outside of range [0,9999]", t.name, y)
		}
		w.key(t.name)
		w.b = append(w.b, '"')
		w.b = t.at.AppendFormat(w.b, time.RFC3339Nano)
		w.b = append(w.b, '"')
	}
	w.int("exit", c.Exit)
	w.str("outcome", c.Outcome)
	w.strOmit("rule", c.Rule)
	w.strOmit("code", c.Code)
	w.trueOmit("code_cut", c.CodeCut)
	w.strOmit("stdout", c.Stdout)
	w.trueOmit("stdout_cut", c.StdoutCut)
	w.strOmit("stderr", c.Stderr)
	w.trueOmit("stderr_cut", c.StderrCut)
	w.strsOmit("untold", c.Untold)
	return w.close(), nil
}
