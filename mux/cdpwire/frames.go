package cdpwire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// The DevTools pipe's framing: messages as Chromium's --remote-debugging-pipe frames them (JSON, each ended by a
// NUL byte, which valid JSON never holds raw).

// OverPrefix is how much of an over-limit message a Reader keeps, enough to find its id.
const OverPrefix = 64 << 10

// keepBig is the largest scratch buffer a Reader keeps between long messages: a screenshot's worth, so a
// stream of them is read with no allocation, while one 200 MB answer is not held for a keeper's life.
const keepBig = 4 << 20

// Reader reads NUL-ended messages without copying them when it can: a message that fits in the buffered
// reader's buffer is returned as a slice of that buffer (a relay's one copy is then the write into the other
// side's writer), and a longer one is gathered in a reused scratch buffer. Either way the message is valid
// only until the next call to Next. ReadMessage is the copying form.
type Reader struct {
	br    *bufio.Reader
	limit int

	consumed int    // bytes of the message last returned (and its NUL) still in br's buffer
	hint     int    // what Whole reported: index of the next NUL after consumed, or -1
	hinted   bool   // hint is current
	big      []byte // scratch for messages longer than br's buffer
}

// NewReader reads messages from br; one longer than limit comes back as its first OverPrefix bytes.
func NewReader(br *bufio.Reader, limit int) *Reader {
	return &Reader{br: br, limit: limit}
}

// Next returns the next message without its NUL. A message longer than the limit is consumed to its NUL and
// returned as its first OverPrefix bytes with over=true, so the stream survives it. The stream ending between
// messages is io.EOF; ending inside one is io.ErrUnexpectedEOF.
func (r *Reader) Next() (msg []byte, over bool, err error) {
	r.discard()
	if cap(r.big) > keepBig {
		r.big = nil
	}
	return r.read()
}

// discard drops the message last returned from br's buffer: buffered bytes, so it never blocks or fails.
func (r *Reader) discard() {
	if r.consumed > 0 {
		r.br.Discard(r.consumed)
		r.consumed = 0
	}
}

func (r *Reader) read() (msg []byte, over bool, err error) {
	searched := 0
	if r.hinted {
		r.hinted = false
		if r.hint < 0 {
			searched = r.br.Buffered()
		} else {
			return r.inBuffer(r.hint)
		}
	}
	for {
		buf, _ := r.br.Peek(r.br.Buffered())
		if i := bytes.IndexByte(buf[searched:], 0); i >= 0 {
			return r.inBuffer(searched + i)
		}
		searched = len(buf)
		if len(buf) == r.br.Size() {
			return r.long()
		}
		if _, err := r.br.Peek(len(buf) + 1); err != nil {
			if r.br.Buffered() > len(buf) {
				continue // bytes came with the error: look at them first, the error comes back on the next read
			}
			switch {
			case len(buf) == 0:
				return nil, false, err
			case errors.Is(err, io.EOF):
				return nil, false, io.ErrUnexpectedEOF
			default:
				return nil, false, err
			}
		}
	}
}

// inBuffer returns the message that ends at index n of the buffered bytes.
func (r *Reader) inBuffer(n int) ([]byte, bool, error) {
	buf, _ := r.br.Peek(n + 1)
	r.consumed = n + 1
	if n > r.limit {
		return buf[:min(n, OverPrefix)], true, nil
	}
	return buf[:n], false, nil
}

// long gathers a message longer than the reader's buffer into the scratch buffer, doubling it as it grows
// so each byte is copied about once: growing it by append's 1.25× past 256 KiB instead cost an 8 MiB answer
// 19 allocations, 50 MB and 20× the time.
func (r *Reader) long() ([]byte, bool, error) {
	msg, over := r.big[:0], false
	for {
		chunk, err := r.br.ReadSlice(0)
		switch {
		case err == nil:
			chunk = chunk[:len(chunk)-1]
		case errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return nil, false, io.ErrUnexpectedEOF
		default:
			return nil, false, err
		}
		if !over && len(msg)+len(chunk) > r.limit {
			over = true
		}
		if over {
			chunk = chunk[:min(len(chunk), max(0, OverPrefix-len(msg)))]
		}
		if len(msg)+len(chunk) > cap(msg) {
			grown := make([]byte, len(msg), max(2*cap(msg), len(msg)+len(chunk), 2*r.br.Size()))
			copy(grown, msg)
			msg = grown
		}
		msg = append(msg, chunk...)
		if err == nil {
			r.big = msg
			if over {
				msg = msg[:min(len(msg), OverPrefix)]
			}
			return msg, over, nil
		}
	}
}

// Whole reports whether the reader holds the whole of another message after the one last returned: a
// relay's writer then waits to flush, so a burst goes out in few writes, and flushes before a read blocks.
func (r *Reader) Whole() bool {
	if !r.hinted {
		buf, _ := r.br.Peek(r.br.Buffered())
		r.hint, r.hinted = bytes.IndexByte(buf[r.consumed:], 0), true
	}
	return r.hint >= 0
}

// ReadMessage reads the next message from br as a Reader does, into a slice of its own: it does not alias
// br's buffer, and it survives the next read. A long message's scratch buffer is reused from call to call.
func ReadMessage(br *bufio.Reader, limit int) (msg []byte, over bool, err error) {
	r := Reader{br: br, limit: limit}
	sp, _ := scratch.Get().(*[]byte)
	if sp == nil {
		sp = new([]byte)
	}
	r.big = *sp
	msg, over, err = r.read()
	if err == nil {
		msg = append(make([]byte, 0, len(msg)), msg...)
	}
	r.discard()
	if cap(r.big) <= scratchKeep {
		*sp = r.big[:0]
		scratch.Put(sp)
	}
	return msg, over, err
}

// scratch holds ReadMessage's scratch buffers (*[]byte), reused from message to message.
var scratch sync.Pool

// scratchKeep is the largest scratch buffer ReadMessage keeps for a later message; a larger one goes to the
// collector.
const scratchKeep = 32 << 20

// WriteMessage writes the concatenation of parts as one message, then its NUL. It does not flush.
func WriteMessage(w *bufio.Writer, parts ...[]byte) error {
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return w.WriteByte(0)
}
