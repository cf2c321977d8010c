package mux

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/integration/testkit"
)

// logBuffer collects the log lines that the mux's goroutines write.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSuffix(l.b.String(), "\n"), "\n")
}

func (l *logBuffer) has(msg string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Contains(l.b.String(), msg)
}

// countFields are the numeric log fields that are counts, not durations; every other number must be a
// duration named with its unit.
var countFields = map[string]bool{"try": true, "limit": true, "cap": true}

// TestLogLines drives the mux through the events it logs (a tab cap, a takeover, a disconnect, a hung
// browser, a reconnect) with the logger the manager passes, and checks every line: a JSON object with
// unique keys, the caller's one component, and durations that carry their unit in their name.
func TestLogLines(t *testing.T) {
	var buf logBuffer
	fb := newFakeBrowser(t)
	m := startMux(t, fb, Config{TabCap: 1, Grace: time.Minute, PingInterval: 50 * time.Millisecond, PongTimeout: 150 * time.Millisecond,
		Log: zerolog.New(&buf).Level(zerolog.DebugLevel).With().Str("component", "mux").Logger()})
	old := newClient(t, m, "a")
	old.createTarget("about:blank")
	old.createTarget("about:blank")
	c := newClient(t, m, "a")
	testkit.WaitFor(t, 5*time.Second, "takeover", func() bool { done, _ := old.closed(); return done })
	// A target the mux knows only from a createTarget answer has no targetInfo to log.
	m.mu.Lock()
	bare := &target{id: "BARE", typ: "other"}
	m.addTargetLocked(bare)
	m.ownLocked(bare, m.clients["a"], nil)
	m.mu.Unlock()
	c.ws.Close()
	fb.setStall("Browser.getVersion", true)
	testkit.WaitFor(t, 5*time.Second, "the hung browser dropped", func() bool { return buf.has("browser stopped answering") })
	fb.setStall("Browser.getVersion", false)
	testkit.WaitFor(t, 5*time.Second, "reconnected", func() bool { return fb.connections() >= 2 && m.Stats().Upstream })
	for _, msg := range []string{"tab cap reached", "second connection", "client disconnected", "target owned"} {
		if !buf.has(msg) {
			t.Fatalf("no log line %q; the test no longer covers it", msg)
		}
	}

	for _, line := range buf.lines() {
		var fields map[string]any
		if err := json.Unmarshal([]byte(line), &fields); err != nil {
			t.Fatalf("log line is not a JSON object: %v\n%s", err, line)
		}
		if testkit.HasDupKeys([]byte(line)) {
			t.Fatalf("log line has a duplicate key:\n%s", line)
		}
		if n := strings.Count(line, `"component":`); n != 1 || fields["component"] != "mux" {
			t.Fatalf("log line has %d component keys (%v); want the caller's one, \"mux\":\n%s", n, fields["component"], line)
		}
		for k, v := range fields {
			if _, isNumber := v.(float64); isNumber && !countFields[k] && !strings.HasSuffix(k, "_ms") {
				t.Fatalf("log field %q is a number that is neither a count nor named for its unit (_ms):\n%s", k, line)
			}
		}
	}
}
