package keeper

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"time"

	"vibebrowser/mux/cdpwire"
)

// While the keeper holds the pipe (before its first client, between clients) it reads Chromium's messages
// itself: answers to its own commands are taken, everything else is nobody's and dropped, so Chromium never
// blocks on a full pipe. The reader stops when the pipe is lent, and says whether it stopped inside a message.

// maxOwnAnswer bounds what the keeper gathers of one message: its own commands' answers are small, and a
// longer message is nobody's.
const maxOwnAnswer = 64 << 10

// holdReader is one run of the keeper's reading of the pipe.
type holdReader struct {
	stop    chan struct{} // closed to ask the reader to stop
	stopped chan bool     // the reader's last word, once it has stopped: whether it stopped inside a message
}

// startHolding starts reading the pipe. inside says that the pipe's next bytes may be the rest of a message
// whose start was read by someone else (a client that went): up to the first NUL, only a whole JSON message
// is taken (an answer of the keeper's, which would have come whole), and the rest is dropped.
func (k *keeper) startHolding(inside bool) *holdReader {
	r := &holdReader{stop: make(chan struct{}), stopped: make(chan bool, 1)}
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		r.stopped <- k.hold(r, inside)
	}()
	return r
}

// park stops r at once, wherever it is: the read in progress is cut short by a deadline in the past. It
// returns whether the reader stopped inside a message, whose rest the pipe's next reader must skip.
func (k *keeper) park(r *holdReader) bool {
	close(r.stop)
	k.br.fromBrowser.SetReadDeadline(time.Now())
	inside := <-r.stopped
	k.br.fromBrowser.SetReadDeadline(time.Time{})
	return inside
}

// hold reads the pipe until it is asked to stop or the pipe fails (Chromium gone, the keeper stopping), and
// returns whether it stopped inside a message.
func (k *keeper) hold(r *holdReader, inside bool) bool {
	buf := make([]byte, bufSize)
	msg := make([]byte, 0, 4<<10)
	keep := true     // the message being read is short enough to be one of the keeper's answers
	unsure := inside // its start may not be a message's start
	for {
		n, err := k.br.fromBrowser.Read(buf)
		data := buf[:n]
		for len(data) > 0 {
			i := bytes.IndexByte(data, 0)
			if i < 0 {
				if keep = keep && len(msg)+len(data) <= maxOwnAnswer; keep {
					msg = append(msg, data...)
				}
				inside = true
				break
			}
			if keep && len(msg)+i <= maxOwnAnswer {
				if m := append(msg, data[:i]...); !unsure || json.Valid(m) {
					k.held(m)
				}
			}
			msg, keep, inside, unsure = msg[:0], true, false, false
			data = data[i+1:]
		}
		if err != nil {
			select {
			case <-r.stop:
				return inside
			default:
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				continue // a park's deadline that outran its stop: the stop is being closed
			}
			return inside // EOF: Chromium has gone; the waiter says how
		}
	}
}

// held takes one whole message read while the keeper holds the pipe: an answer to the keeper's own command
// goes to it, anything else is dropped.
func (k *keeper) held(msg []byte) {
	m, err := cdpwire.Scan(msg)
	if err != nil || !m.HasID() {
		return
	}
	id, ok := parseID(m.ID(msg))
	if !ok {
		return
	}
	k.mu.Lock()
	answered, ok := k.calls[id]
	delete(k.calls, id)
	k.mu.Unlock()
	if ok && answered != nil {
		answered(msg)
	}
}

// parseID reads an integer id token; anything else (Chrome accepts only integers) is no id of the keeper's.
func parseID(tok []byte) (int64, bool) {
	neg := len(tok) > 0 && tok[0] == '-'
	if neg {
		tok = tok[1:]
	}
	if len(tok) == 0 || len(tok) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}
