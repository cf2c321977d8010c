// Package pipewire speaks the DevTools pipe: messages as Chromium's --remote-debugging-pipe frames them (JSON,
// each ended by a NUL byte, which valid JSON never holds raw) and the hello of the keeper that holds the pipe.
package pipewire

import (
	"bufio"
	"errors"
	"io"
)

// OverPrefix is how much of an over-limit message ReadMessage keeps, enough to find its id.
const OverPrefix = 64 << 10

// ReadMessage reads the next message from br, without its NUL. A message longer than limit is consumed to
// its NUL and returned as its first OverPrefix bytes with over=true, so the stream survives it. The stream
// ending between messages is io.EOF; ending inside one is io.ErrUnexpectedEOF. The returned slice is the
// caller's: it does not alias br's buffer.
func ReadMessage(br *bufio.Reader, limit int) (msg []byte, over bool, err error) {
	for started := false; ; started = true {
		chunk, err := br.ReadSlice(0)
		switch {
		case err == nil:
			chunk = chunk[:len(chunk)-1]
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) && !started && len(chunk) == 0:
			return nil, false, io.EOF
		case errors.Is(err, io.EOF):
			return nil, false, io.ErrUnexpectedEOF
		default:
			return nil, false, err
		}
		switch {
		case over || len(msg)+len(chunk) > limit:
			over = true
			keep := min(len(chunk), max(0, OverPrefix-len(msg)))
			msg = append(msg, chunk[:keep]...)
		case !started && err == nil:
			// The whole message in the reader's buffer: one copy of exactly its size.
			return append(make([]byte, 0, len(chunk)), chunk...), false, nil
		case !started:
			msg = append(make([]byte, 0, 2*len(chunk)), chunk...)
		default:
			msg = append(msg, chunk...)
		}
		if err == nil {
			return msg, over, nil
		}
	}
}

// WriteMessage writes the concatenation of parts as one message, then its NUL. It does not flush.
func WriteMessage(w *bufio.Writer, parts ...[]byte) error {
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return w.WriteByte(0)
}
