package cdpwire

import (
	"bufio"
	"errors"
	"io"
	"sync"
)

// The DevTools pipe's framing: messages as Chromium's --remote-debugging-pipe frames them (JSON, each ended by a
// NUL byte, which valid JSON never holds raw).

// OverPrefix is how much of an over-limit message ReadMessage keeps, enough to find its id.
const OverPrefix = 64 << 10

// ReadMessage reads the next message from br, without its NUL. A message longer than limit is consumed to
// its NUL and returned as its first OverPrefix bytes with over=true, so the stream survives it. The stream
// ending between messages is io.EOF; ending inside one is io.ErrUnexpectedEOF. The returned slice is the
// caller's: it does not alias br's buffer.
func ReadMessage(br *bufio.Reader, limit int) (msg []byte, over bool, err error) {
	chunk, err := br.ReadSlice(0)
	switch {
	case err == nil && len(chunk)-1 <= limit:
		// The whole message in the reader's buffer: one copy of exactly its size.
		return append(make([]byte, 0, len(chunk)-1), chunk[:len(chunk)-1]...), false, nil
	case errors.Is(err, io.EOF) && len(chunk) == 0:
		return nil, false, io.EOF
	}
	// A longer one is gathered in a scratch buffer and copied once into one of its exact size: growing
	// the returned slice instead (append grows by 1.25× past 256 KiB) cost an 8 MiB answer 19
	// allocations, 50 MB and 20× the time.
	sp, _ := scratch.Get().(*[]byte)
	if sp == nil {
		sp = new([]byte)
	}
	buf := (*sp)[:0]
	defer func() {
		if cap(buf) <= scratchKeep {
			*sp = buf[:0]
			scratch.Put(sp)
		}
	}()
	for {
		switch {
		case err == nil:
			chunk = chunk[:len(chunk)-1]
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil, false, io.ErrUnexpectedEOF
		default:
			return nil, false, err
		}
		if !over && len(buf)+len(chunk) > limit {
			over = true
			buf = buf[:min(len(buf), OverPrefix)]
		}
		if over {
			chunk = chunk[:min(len(chunk), max(0, OverPrefix-len(buf)))]
		}
		buf = append(grow(buf, len(chunk)), chunk...)
		if err == nil {
			return append(make([]byte, 0, len(buf)), buf...), over, nil
		}
		chunk, err = br.ReadSlice(0)
	}
}

// scratch holds the scratch buffers of ReadMessage (*[]byte), reused from message to message.
var scratch sync.Pool

// scratchKeep is the largest scratch buffer kept for a later message; a larger one goes to the collector.
const scratchKeep = 32 << 20

// grow makes room for n more bytes in b, doubling its capacity so that a long message is copied a few
// times while it grows, not once per read.
func grow(b []byte, n int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	nb := make([]byte, len(b), max(2*cap(b), len(b)+n, 256<<10))
	copy(nb, b)
	return nb
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
