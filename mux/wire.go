package mux

import (
	"bufio"
	"context"
	crand "crypto/rand"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/gorilla/websocket"
)

// The WebSocket wire (RFC 6455) that the mux frames itself: every frame it writes, to clients and to a
// browser's WebSocket, goes through writeFrame, and the browser's frames are read by readWireMessage.
// gorilla still does the clients' handshake and reads their messages; the browser connection is the
// mux's own from the handshake on (dialWebSocket). A browser behind a keeper has no frames at all
// (transport.go).

// frame is one outgoing WebSocket message assembled from up to three byte slices. Rewriting a message id
// puts the new id in mid and keeps head and tail as sub-slices of the received message: the bytes are
// spliced on the wire instead of being copied or re-encoded.
type frame struct {
	head, mid, tail []byte
	op              int // WebSocket opcode; 0 is a text message
}

func (f frame) size() int { return len(f.head) + len(f.mid) + len(f.tail) }

func wholeFrame(b []byte) frame { return frame{head: b} }

// writeFrame writes f to w as one unfragmented frame (RFC 6455 §5.2), a text message unless f.op says
// otherwise, masked with a fresh key when masked is set (the mux's frames to the browser; a client's are
// never masked). One frame per message: Chrome's DevTools WebSocket server does not reassemble
// fragments, and gorilla's writer fragments any message longer than its write buffer, so the mux frames
// messages itself in both directions (which also saves gorilla's syscall per message on the client side).
func writeFrame(w *bufio.Writer, f frame, masked bool) error {
	op := f.op
	if op == 0 {
		op = websocket.TextMessage
	}
	n := f.size()
	var hdr [14]byte
	hdr[0] = 0x80 | byte(op) // FIN + opcode
	var maskBit byte
	if masked {
		maskBit = 0x80
	}
	h := 2
	switch {
	case n <= 125:
		hdr[1] = maskBit | byte(n)
	case n <= 0xFFFF:
		hdr[1] = maskBit | 126
		binary.BigEndian.PutUint16(hdr[2:], uint16(n))
		h = 4
	default:
		hdr[1] = maskBit | 127
		binary.BigEndian.PutUint64(hdr[2:], uint64(n))
		h = 10
	}
	if !masked {
		if _, err := w.Write(hdr[:h]); err != nil {
			return err
		}
		for _, p := range [3][]byte{f.head, f.mid, f.tail} {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
		return nil
	}
	var key [4]byte
	binary.LittleEndian.PutUint32(key[:], rand.Uint32())
	copy(hdr[h:], key[:])
	h += 4
	if _, err := w.Write(hdr[:h]); err != nil {
		return err
	}
	// Masked in place in w's own buffer: the message is copied once, never into a scratch buffer first.
	pos := 0
	for _, part := range [3][]byte{f.head, f.mid, f.tail} {
		for len(part) > 0 {
			if w.Available() == 0 {
				if err := w.Flush(); err != nil {
					return err
				}
			}
			buf := w.AvailableBuffer()
			c := min(len(part), cap(buf))
			buf = append(buf, part[:c]...)
			for i := range buf {
				buf[i] ^= key[(pos+i)&3]
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
			pos += c
			part = part[c:]
		}
	}
	return nil
}

// overPrefix is how much of an over-limit message is kept to find its id.
const overPrefix = 64 << 10

// readWireMessage reads the next data message from br, handing each ping's payload to ping (the caller
// queues the pong). Each frame is read into a buffer of the exact size its header announces: growing a
// buffer for a multi-megabyte answer costs more than the hop. A message over limit is consumed and
// returned as its first bytes with over=true, so the connection survives it. A close frame ends the
// stream with io.EOF.
func readWireMessage(br *bufio.Reader, limit int, ping func(payload []byte)) (b []byte, over bool, err error) {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(br, hdr[:2]); err != nil {
			return nil, false, err
		}
		fin, op, masked := hdr[0]&0x80 != 0, int(hdr[0]&0x0f), hdr[1]&0x80 != 0
		n := uint64(hdr[1] & 0x7f)
		switch n {
		case 126:
			if _, err := io.ReadFull(br, hdr[:2]); err != nil {
				return nil, false, err
			}
			n = uint64(binary.BigEndian.Uint16(hdr[:2]))
		case 127:
			if _, err := io.ReadFull(br, hdr[:8]); err != nil {
				return nil, false, err
			}
			n = binary.BigEndian.Uint64(hdr[:8])
		}
		var key [4]byte
		if masked {
			if _, err := io.ReadFull(br, key[:]); err != nil {
				return nil, false, err
			}
		}
		if op >= 8 { // control frame: at most 125 bytes
			if n > 125 {
				return nil, false, errors.New("websocket: oversized control frame")
			}
			payload := make([]byte, n)
			if _, err := io.ReadFull(br, payload); err != nil {
				return nil, false, err
			}
			unmask(payload, key, masked)
			switch op {
			case websocket.CloseMessage:
				return nil, false, io.EOF
			case websocket.PingMessage:
				ping(payload)
			}
			continue
		}
		switch {
		case over:
			_, err = discardN(br, n)
		case uint64(len(b))+n > uint64(limit):
			over = true
			keep := min(int(n), max(0, overPrefix-len(b)))
			start := len(b)
			b = append(b, make([]byte, keep)...)
			if _, err = io.ReadFull(br, b[start:]); err == nil {
				unmask(b[start:], key, masked)
				_, err = discardN(br, n-uint64(keep))
			}
		default:
			start := len(b)
			if b == nil {
				b = make([]byte, n)
			} else {
				b = append(b, make([]byte, n)...)
			}
			_, err = io.ReadFull(br, b[start:])
			unmask(b[start:], key, masked)
		}
		if err != nil {
			return nil, false, err
		}
		if fin {
			return b, over, nil
		}
	}
}

// unmask undoes a frame's masking of p, the start of its payload.
func unmask(p []byte, key [4]byte, masked bool) {
	if !masked {
		return
	}
	for i := range p {
		p[i] ^= key[i&3]
	}
}

func discardN(br *bufio.Reader, n uint64) (uint64, error) {
	var done uint64
	for n > 0 {
		step := int(min(n, 1<<30))
		k, err := br.Discard(step)
		done += uint64(k)
		n -= uint64(k)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// dialWebSocket opens a client WebSocket (RFC 6455 §4.1) and returns the socket with the reader that
// read the handshake (it may hold the first frames). The mux frames the browser connection itself in
// both directions (writeFrame, readWireMessage).
func dialWebSocket(ctx context.Context, rawURL string) (net.Conn, *bufio.Reader, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, nil, err
	}
	host := u.Host
	if u.Port() == "" {
		if u.Scheme == "wss" {
			host = net.JoinHostPort(u.Hostname(), "443")
		} else {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		nc.SetDeadline(dl)
	}
	if u.Scheme == "wss" {
		tc := tls.Client(nc, &tls.Config{ServerName: u.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			nc.Close()
			return nil, nil, err
		}
		nc = tc
	}
	var nonce [16]byte
	crand.Read(nonce[:])
	key := base64.StdEncoding.EncodeToString(nonce[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		nc.Close()
		return nil, nil, err
	}
	br := bufio.NewReaderSize(nc, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	resp.Body.Close()
	sum := sha1.Sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		nc.Close()
		return nil, nil, fmt.Errorf("handshake refused: %s", resp.Status)
	}
	nc.SetDeadline(time.Time{})
	return nc, br, nil
}

// lazyDeadline re-arms a socket deadline at most every few seconds instead of per message: arming a
// runtime timer for every write or read wakes the network poller each time, a cost per call the budget
// of SPEC §8 does not have room for. A deadline up to a quarter of its timeout late changes nothing.
type lazyDeadline struct{ armed time.Time }

func (d *lazyDeadline) extend(set func(time.Time) error, now time.Time, timeout time.Duration) {
	if now.Sub(d.armed) < timeout/4 {
		return
	}
	d.armed = now
	set(now.Add(timeout))
}
