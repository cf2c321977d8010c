package chrome

import (
	"bufio"
	"io"
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

func (r *ring) emit(line string, log zerolog.Logger) {
	r.add(line)
	log.Debug().Str("stderr", line).Msg("chromium")
}
