package cdpwire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

type frame struct {
	msg  string
	over bool
}

// readFrames returns every message a Reader of the given buffer size reads from stream, asking Whole after
// each one as the keeper's relay does, fed one byte at a time when slow is set.
func readFrames(stream []byte, size, limit int, slow bool) ([]frame, error) {
	var r io.Reader = bytes.NewReader(stream)
	if slow {
		r = iotest.OneByteReader(r)
	}
	fr := NewReader(bufio.NewReaderSize(r, size), limit)
	var got []frame
	for {
		m, over, err := fr.Next()
		if err != nil {
			return got, err
		}
		got = append(got, frame{string(m), over})
		fr.Whole()
	}
}

// readOracle is what any reader of the framing must read from stream: the messages between NULs, each over
// limit cut to its first OverPrefix bytes; bytes after the last NUL end it with io.ErrUnexpectedEOF.
func readOracle(stream []byte, limit int) ([]frame, error) {
	parts := bytes.Split(stream, []byte{0})
	var got []frame
	for _, m := range parts[:len(parts)-1] {
		if len(m) > limit {
			got = append(got, frame{string(m[:min(len(m), OverPrefix)]), true})
		} else {
			got = append(got, frame{string(m), false})
		}
	}
	if len(parts[len(parts)-1]) > 0 {
		return got, io.ErrUnexpectedEOF
	}
	return got, io.EOF
}

// readCopies is the same through ReadMessage, the copying form.
func readCopies(stream []byte, size, limit int) ([]frame, error) {
	br := bufio.NewReaderSize(bytes.NewReader(stream), size)
	var got []frame
	for {
		m, over, err := ReadMessage(br, limit)
		if err != nil {
			return got, err
		}
		got = append(got, frame{string(m), over})
	}
}

func TestReader(t *testing.T) {
	long := `{"id":1,"result":{"data":"` + strings.Repeat("x", 100) + `"}}`
	huge := `{"id":9,"result":{"data":"` + strings.Repeat("y", OverPrefix+100) + `"}}`
	tests := []struct {
		name   string
		stream string
		size   int
		limit  int
		want   []frame
		end    error
	}{
		{"two joined", "{\"id\":1}\x00{\"id\":2}\x00", 16, 1 << 20, []frame{{`{"id":1}`, false}, {`{"id":2}`, false}}, io.EOF},
		{"longer than the buffer", long + "\x00{\"id\":2}\x00", 16, 1 << 20, []frame{{long, false}, {`{"id":2}`, false}}, io.EOF},
		{"at the limit", long + "\x00", 1024, len(long), []frame{{long, false}}, io.EOF},
		{"over the limit in the buffer", long + "\x00{\"id\":2}\x00", 1024, len(long) - 1, []frame{{long, true}, {`{"id":2}`, false}}, io.EOF},
		{"over the limit, longer than the buffer", long + "\x00{\"id\":2}\x00", 16, len(long) - 1, []frame{{long, true}, {`{"id":2}`, false}}, io.EOF},
		{"over the limit, cut to its first bytes", huge + "\x00", 16, 1000, []frame{{huge[:OverPrefix], true}}, io.EOF},
		{"empty message", "\x00{\"id\":3}\x00", 16, 1 << 20, []frame{{"", false}, {`{"id":3}`, false}}, io.EOF},
		{"cut inside a message", "{\"id\":1}\x00{\"id\"", 16, 1 << 20, []frame{{`{"id":1}`, false}}, io.ErrUnexpectedEOF},
		{"cut inside a long one", "{\"id\":1}\x00" + long, 16, 1 << 20, []frame{{`{"id":1}`, false}}, io.ErrUnexpectedEOF},
		{"nothing", "", 16, 1 << 20, nil, io.EOF},
	}
	for _, tt := range tests {
		for _, slow := range []bool{false, true} {
			name := tt.name
			if slow {
				name += ", one byte a read"
			}
			t.Run(name, func(t *testing.T) {
				got, err := readFrames([]byte(tt.stream), tt.size, tt.limit, slow)
				if !errors.Is(err, tt.end) {
					t.Errorf("readFrames(%.40q) ended with %v; want %v", tt.stream, err, tt.end)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("readFrames(%.40q) = %d messages; want %d", tt.stream, len(got), len(tt.want))
				}
				for i := range got {
					if got[i] != tt.want[i] {
						t.Errorf("message %d = %.60q over=%v; want %.60q over=%v", i, got[i].msg, got[i].over, tt.want[i].msg, tt.want[i].over)
					}
				}
			})
		}
	}
}

// TestReaderWhole checks the relay's flush rule: Whole is true exactly when another complete message
// is buffered.
func TestReaderWhole(t *testing.T) {
	pr, pw := io.Pipe()
	fr := NewReader(bufio.NewReaderSize(pr, 1024), 1<<20)
	go func() {
		pw.Write([]byte("{\"id\":1}\x00{\"id\":2}\x00{\"id\""))
		pw.Write([]byte(":3}\x00"))
		pw.Close()
	}()
	for i, want := range []bool{true, false, false} {
		if _, _, err := fr.Next(); err != nil {
			t.Fatalf("next %d: %v", i, err)
		}
		if got := fr.Whole(); got != want {
			t.Errorf("Whole() after message %d = %v; want %v", i+1, got, want)
		}
	}
}

func FuzzReader(f *testing.F) {
	f.Add([]byte("{\"id\":1}\x00{\"id\":2}\x00"), uint8(16), uint16(100))
	f.Add([]byte("\x00\x00abc"), uint8(1), uint16(0))
	f.Add([]byte(strings.Repeat("z", 300)+"\x00x\x00"), uint8(20), uint16(250))
	f.Fuzz(func(t *testing.T, stream []byte, size uint8, limit uint16) {
		sz := int(size) + 16 // bufio's smallest buffer
		want, wantErr := readOracle(stream, int(limit))
		for name, read := range map[string]func() ([]frame, error){
			"Reader":      func() ([]frame, error) { return readFrames(stream, sz, int(limit), false) },
			"ReadMessage": func() ([]frame, error) { return readCopies(stream, sz, int(limit)) },
		} {
			got, err := read()
			if !errors.Is(err, wantErr) {
				t.Fatalf("%s ended with %v; want %v", name, err, wantErr)
			}
			if len(got) != len(want) {
				t.Fatalf("%s read %d messages; want %d", name, len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s: message %d = %q over=%v; want %q over=%v", name, i, got[i].msg, got[i].over, want[i].msg, want[i].over)
				}
			}
		}
	})
}
