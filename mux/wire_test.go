package mux

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// headerLen is the size of a frame header RFC 6455 §5.2 prescribes for a payload of n bytes: the shortest
// length form, and the masking key when masked.
func headerLen(n int, masked bool) int {
	h := 2
	switch {
	case n > 0xFFFF:
		h = 10
	case n > 125:
		h = 4
	}
	if masked {
		h += 4
	}
	return h
}

func encode(t testing.TB, masked bool, frames ...frame) []byte {
	t.Helper()
	var buf bytes.Buffer
	bw := bufio.NewWriterSize(&buf, 4096) // smaller than the largest frames: the masking crosses flushes
	for _, f := range frames {
		if err := writeFrame(bw, f, masked); err != nil {
			t.Fatal(err)
		}
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFrameHeaders checks writeFrame against RFC 6455 §5.7's examples, independently of the mux's reader.
func TestFrameHeaders(t *testing.T) {
	tests := []struct {
		name   string
		f      frame
		masked bool
		want   []byte // the header without the masking key
	}{
		{"unmasked Hello", wholeFrame([]byte("Hello")), false, []byte{0x81, 0x05}},
		{"masked Hello", wholeFrame([]byte("Hello")), true, []byte{0x81, 0x85}},
		{"unmasked ping", frame{op: websocket.PingMessage, head: []byte("Hello")}, false, []byte{0x89, 0x05}},
		{"256 bytes binary", frame{op: websocket.BinaryMessage, head: make([]byte, 256)}, false, []byte{0x82, 0x7e, 0x01, 0x00}},
		{"64 KiB binary", frame{op: websocket.BinaryMessage, head: make([]byte, 65536)}, false, []byte{0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0}},
		{"65535 bytes masked", wholeFrame(make([]byte, 65535)), true, []byte{0x81, 0xfe, 0xff, 0xff}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := encode(t, tt.masked, tt.f)
			if !bytes.Equal(b[:len(tt.want)], tt.want) {
				t.Fatalf("writeFrame(%s) header = % x; want % x", tt.name, b[:len(tt.want)], tt.want)
			}
			body := b[len(tt.want):]
			if tt.masked {
				key := body[:4]
				body = body[4:]
				for i := range body {
					body[i] ^= key[i&3]
				}
			}
			if !bytes.Equal(body, join(tt.f)) {
				t.Fatalf("writeFrame(%s) payload differs from the message", tt.name)
			}
		})
	}
}

func TestUpstreamWritesOneFrame(t *testing.T) {
	payload := strings.Repeat("z", 300<<10)
	f := frame{head: []byte(`{"id":`), mid: []byte("12"), tail: []byte(`,"method":"x","params":{"s":"` + payload + `"}}`)}
	b := encode(t, true, f)
	if b[0] != 0x81 || b[1] != 0x80|127 {
		t.Fatalf("header % x; want FIN text frame, masked, 64-bit length", b[:2])
	}
	n := binary.BigEndian.Uint64(b[2:10])
	key := b[10:14]
	body := b[14:]
	if int(n) != f.size() || len(body) != f.size() {
		t.Fatalf("frame length %d, body %d; want one frame of %d", n, len(body), f.size())
	}
	for i := range body {
		body[i] ^= key[i&3]
	}
	if string(body) != string(join(f)) {
		t.Fatal("unmasked payload differs")
	}
}

// frameBoundaries are the payload sizes where the length form changes (7-bit, 16-bit, 64-bit).
var frameBoundaries = []int{0, 1, 124, 125, 126, 127, 65534, 65535, 65536, 65537}

// FuzzFrame round-trips messages through the one encoder (writeFrame) and the browser-side reader
// (readWireMessage), masked and unmasked: each message is one frame with the shortest header, a ping
// between two messages reaches the ping callback, a message over the limit comes back as its prefix
// without desynchronising the stream, and a close frame ends it.
func FuzzFrame(f *testing.F) {
	for _, n := range frameBoundaries {
		for _, masked := range []bool{false, true} {
			f.Add([]byte(`{"id":1,"result":{}}`), uint32(n), masked, uint16(n/3), uint16(n/2))
		}
	}
	f.Add([]byte{}, uint32(0), true, uint16(0), uint16(0))
	f.Add([]byte{0xff, 0x00, 0x81}, uint32(200), false, uint16(7), uint16(300))
	f.Fuzz(func(t *testing.T, seed []byte, size uint32, masked bool, cut1, cut2 uint16) {
		// Sizes go a little past the 64-bit boundary; the payload repeats seed.
		n := int(size % (1<<17 + 1))
		payload := make([]byte, n)
		for i := range payload {
			if len(seed) > 0 {
				payload[i] = seed[i%len(seed)]
			} else {
				payload[i] = byte(i)
			}
		}
		i := int(cut1) % (n + 1)
		j := i + int(cut2)%(n-i+1)
		msg := frame{head: payload[:i], mid: payload[i:j], tail: payload[j:]}
		pingData := seed[:min(len(seed), 125)]
		next := wholeFrame([]byte(`{"id":2}`))
		wire := encode(t, masked, msg, frame{op: websocket.PingMessage, head: pingData}, next,
			frame{op: websocket.CloseMessage, head: websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")})

		first := encode(t, masked, msg)
		if len(first) != headerLen(n, masked)+n {
			t.Fatalf("writeFrame(%d bytes, masked=%v) = %d bytes; want one frame of %d", n, masked, len(first), headerLen(n, masked)+n)
		}
		if first[0] != 0x81 || (first[1]&0x80 != 0) != masked {
			t.Fatalf("writeFrame(%d bytes, masked=%v) header % x; want FIN, text, mask bit %v", n, masked, first[:2], masked)
		}

		for _, limit := range []int{256 << 20, n - 1} {
			if limit < 0 {
				continue
			}
			var pings [][]byte
			br := bufio.NewReaderSize(bytes.NewReader(wire), 4096)
			onPing := func(p []byte) { pings = append(pings, p) }
			b, over, err := readWireMessage(br, limit, onPing)
			if err != nil {
				t.Fatalf("readWireMessage(%d bytes, masked=%v, limit %d): %v", n, masked, limit, err)
			}
			want, wantOver := payload, false
			if n > limit {
				want, wantOver = payload[:min(n, overPrefix)], true
			}
			if over != wantOver || !bytes.Equal(b, want) {
				t.Fatalf("readWireMessage(%d bytes, masked=%v, limit %d) = %d bytes (the message's: %v), over=%v; want %d bytes, over=%v",
					n, masked, limit, len(b), bytes.Equal(b, want), over, len(want), wantOver)
			}
			b, over, err = readWireMessage(br, limit, onPing)
			if err != nil || over != (next.size() > limit) || string(b) != `{"id":2}` {
				t.Fatalf("message after %d bytes (masked=%v, limit %d) = %q, over=%v, %v; want the next message", n, masked, limit, b, over, err)
			}
			if len(pings) != 1 || !bytes.Equal(pings[0], pingData) {
				t.Fatalf("pings between messages = %q; want [%q]", pings, pingData)
			}
			if _, _, err := readWireMessage(br, limit, onPing); err != io.EOF {
				t.Fatalf("after the close frame: %v; want io.EOF", err)
			}
		}
	})
}
