package keeper

import (
	"bufio"
	"bytes"
	"errors"
	"io"

	"vibebrowser/mux/cdpwire"
)

// keepBig is the largest scratch buffer a frameReader keeps between long messages: a screenshot's worth,
// so a stream of them is read with no allocation, while one 200 MB answer is not held for the keeper's life.
const keepBig = 4 << 20

// frameReader reads NUL-ended messages the way cdpwire.ReadMessage does, without its copy when it can: a
// message that fits in the reader's buffer is returned as a slice of that buffer (the relay's one copy is
// then the write into the other side's writer), and a longer one is gathered in a reused scratch buffer.
// Either way the message is valid only until the next call to next.
type frameReader struct {
	br    *bufio.Reader
	limit int

	consumed int    // bytes of the message last returned (and its NUL) still in br's buffer
	hint     int    // what whole reported: index of the next NUL after consumed, or -1
	hinted   bool   // hint is current
	big      []byte // scratch for messages longer than br's buffer
}

func newFrameReader(r io.Reader, size, limit int) *frameReader {
	return &frameReader{br: bufio.NewReaderSize(r, size), limit: limit}
}

// next returns the next message without its NUL. A message longer than the limit is consumed to its NUL and
// returned as its first cdpwire.OverPrefix bytes with over=true, so the stream survives it. The stream
// ending between messages is io.EOF; ending inside one is io.ErrUnexpectedEOF.
func (r *frameReader) next() (msg []byte, over bool, err error) {
	if r.consumed > 0 {
		r.br.Discard(r.consumed) // buffered bytes: never blocks, never fails
		r.consumed = 0
	}
	if cap(r.big) > keepBig {
		r.big = nil
	}
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
func (r *frameReader) inBuffer(n int) ([]byte, bool, error) {
	buf, _ := r.br.Peek(n + 1)
	r.consumed = n + 1
	if n > r.limit {
		return buf[:min(n, cdpwire.OverPrefix)], true, nil
	}
	return buf[:n], false, nil
}

// long gathers a message longer than the reader's buffer into the scratch buffer, doubling it as it grows
// so each byte is copied about once.
func (r *frameReader) long() ([]byte, bool, error) {
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
			chunk = chunk[:min(len(chunk), max(0, cdpwire.OverPrefix-len(msg)))]
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
				msg = msg[:min(len(msg), cdpwire.OverPrefix)]
			}
			return msg, over, nil
		}
	}
}

// whole reports whether the reader holds the whole of another message after the one last returned: the
// relay's writer then waits to flush, so a burst goes out in few writes, and flushes before a read blocks.
func (r *frameReader) whole() bool {
	if !r.hinted {
		buf, _ := r.br.Peek(r.br.Buffered())
		r.hint, r.hinted = bytes.IndexByte(buf[r.consumed:], 0), true
	}
	return r.hint >= 0
}
