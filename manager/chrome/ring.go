package chrome

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

const (
	// ringLines is how many of Chromium's last stderr lines are kept for error messages.
	ringLines = 50
	// maxLineBytes truncates a single stderr line; Chromium sometimes dumps very long ones.
	maxLineBytes = 1024
)

// ring keeps the last ringLines lines written to it.
type ring struct {
	mu    sync.Mutex // mu guards the fields below
	lines []string
	next  int
	full  bool
}

func newRing() *ring { return &ring{lines: make([]string, ringLines)} }

func (r *ring) add(line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines[r.next] = line
	r.next = (r.next + 1) % len(r.lines)
	if r.next == 0 {
		r.full = true
	}
}

// snapshot returns the kept lines, oldest first.
func (r *ring) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.full {
		return append([]string(nil), r.lines[:r.next]...)
	}
	out := make([]string, 0, len(r.lines))
	out = append(out, r.lines[r.next:]...)
	return append(out, r.lines[:r.next]...)
}

// consume reads lines from rd into r (truncating long ones) and logs each at debug, until EOF or error.
func (r *ring) consume(rd io.Reader, log zerolog.Logger) {
	br := bufio.NewReaderSize(rd, maxLineBytes)
	for {
		chunk, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			line := string(chunk) + "…"
			// Skip the rest of the over-long line.
			for err == bufio.ErrBufferFull {
				_, err = br.ReadSlice('\n')
			}
			r.emit(line, log)
			if err != nil {
				return
			}
			continue
		}
		if len(chunk) > 0 {
			n := len(chunk)
			if chunk[n-1] == '\n' {
				n--
			}
			r.emit(string(chunk[:n]), log)
		}
		if err != nil {
			return
		}
	}
}

// emit logs line at debug and keeps it, unless it is D-Bus noise or the keeper's chatter.
func (r *ring) emit(line string, log zerolog.Logger) {
	log.Debug().Str("stderr", line).Msg("chromium")
	if !dbusNoise(line) && !keeperChatter(line) {
		r.add(line)
	}
}

// dbusNoise tells a line of Chromium's D-Bus client, which it writes by the dozen wherever no session or
// system bus runs (a server, a container, a service) and which never says why a browser failed: kept, fifty
// of them pushed the line that did ("Failed To Create Data Directory", printed first) out of the ring.
// Chromium's log lines start "[pid:tid:time:LEVEL:dbus/bus.cc:405] …"; before Chromium 126 the source was
// "bus.cc(405)", so the message of its commonest line is matched too.
func dbusNoise(line string) bool {
	header, msg, ok := strings.Cut(line, "] ")
	if !ok || !strings.HasPrefix(header, "[") {
		return false
	}
	return strings.Contains(header, ":dbus/") || strings.HasPrefix(msg, "Failed to connect to the bus:")
}

// keeperChatter tells the keeper's own info and debug lines in its log (each a JSON object of zerolog's,
// with its paths): they say what the keeper did, never why the browser failed, and a launch error carrying
// them grew past what a WebSocket client shows of a refused handshake (gorilla keeps 1 KiB of the body).
func keeperChatter(line string) bool {
	if !strings.HasPrefix(line, "{") {
		return false
	}
	var l struct{ Level, Component string }
	if json.Unmarshal([]byte(line), &l) != nil {
		return false
	}
	return l.Component == "keeper" && (l.Level == "info" || l.Level == "debug")
}
