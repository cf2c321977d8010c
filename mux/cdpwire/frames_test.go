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

// read returns every message of stream as ReadMessage sees it through a reader of the given buffer size,
// fed one byte at a time when slow is set.
func read(t *testing.T, stream []byte, size, limit int, slow bool) (msgs []string, overs []bool, err error) {
	t.Helper()
	var r io.Reader = bytes.NewReader(stream)
	if slow {
		r = iotest.OneByteReader(r)
	}
	br := bufio.NewReaderSize(r, size)
	for {
		m, over, err := ReadMessage(br, limit)
		if err != nil {
			return msgs, overs, err
		}
		msgs, overs = append(msgs, string(m)), append(overs, over)
	}
}

func TestReadMessage(t *testing.T) {
	long := `{"id":1,"result":{"data":"` + strings.Repeat("x", 100) + `"}}`
	for _, tc := range []struct {
		name   string
		stream string
		size   int
		limit  int
		want   []string
		overs  []bool
		end    error
	}{
		{"two joined", "{\"id\":1}\x00{\"id\":2}\x00", 16, 1 << 20, []string{`{"id":1}`, `{"id":2}`}, []bool{false, false}, io.EOF},
		{"split over many reads", long + "\x00" + `{"id":2}` + "\x00", 16, 1 << 20, []string{long, `{"id":2}`}, []bool{false, false}, io.EOF},
		{"at the limit", long + "\x00", 16, len(long), []string{long}, []bool{false}, io.EOF},
		{"over the limit, the next one whole", long + "\x00{\"id\":2}\x00", 16, len(long) - 1, []string{long, `{"id":2}`}, []bool{true, false}, io.EOF},
		{"empty message", "\x00{\"id\":3}\x00", 16, 1 << 20, []string{"", `{"id":3}`}, []bool{false, false}, io.EOF},
		{"cut inside a message", "{\"id\":1}\x00{\"id\"", 16, 1 << 20, []string{`{"id":1}`}, []bool{false}, io.ErrUnexpectedEOF},
		{"nothing", "", 16, 1 << 20, nil, nil, io.EOF},
	} {
		for _, slow := range []bool{false, true} {
			msgs, overs, err := read(t, []byte(tc.stream), tc.size, tc.limit, slow)
			if !errors.Is(err, tc.end) {
				t.Errorf("%s (slow %v): ended with %v; want %v", tc.name, slow, err, tc.end)
			}
			if strings.Join(msgs, "|") != strings.Join(tc.want, "|") || len(overs) != len(tc.overs) {
				t.Errorf("%s (slow %v): read %q; want %q", tc.name, slow, msgs, tc.want)
				continue
			}
			for i := range overs {
				if overs[i] != tc.overs[i] {
					t.Errorf("%s (slow %v): message %d over = %v; want %v", tc.name, slow, i, overs[i], tc.overs[i])
				}
			}
		}
	}
}

// TestOverKeepsPrefix: an over-limit message comes back as its first OverPrefix bytes, its id among them,
// whether the limit is below or above OverPrefix.
func TestOverKeepsPrefix(t *testing.T) {
	big := `{"id":77,"result":"` + strings.Repeat("y", 3*OverPrefix) + `"}`
	for _, limit := range []int{OverPrefix / 2, OverPrefix, 2 * OverPrefix} {
		msgs, overs, _ := read(t, []byte(big+"\x00{\"id\":78}\x00"), 4096, limit, false)
		if len(msgs) != 2 || !overs[0] || len(msgs[0]) != OverPrefix || !strings.HasPrefix(msgs[0], `{"id":77,`) {
			t.Fatalf("over-limit message (limit %d) read as %d bytes (over %v); want its first %d", limit, len(msgs[0]), overs, OverPrefix)
		}
		if msgs[1] != `{"id":78}` || overs[1] {
			t.Fatalf("message after an over-limit one (limit %d) = %q (over %v); want it whole", limit, msgs[1], overs[1])
		}
	}
}

// TestLongMessageAllocations: a message longer than the reader's buffer costs one allocation of its own
// size, not a slice regrown read after read.
func TestLongMessageAllocations(t *testing.T) {
	wire := []byte(`{"id":1,"result":"` + strings.Repeat("z", 8<<20) + `"}` + "\x00")
	r := bytes.NewReader(wire)
	br := bufio.NewReaderSize(r, 64<<10)
	var got []byte
	allocs := testing.AllocsPerRun(5, func() {
		r.Reset(wire)
		br.Reset(r)
		got, _, _ = ReadMessage(br, 16<<20)
	})
	if allocs > 1 || len(got) != len(wire)-1 || cap(got) != len(got) {
		t.Fatalf("8 MiB message: %v allocations, %d bytes of capacity %d; want one allocation of %d", allocs, len(got), cap(got), len(wire)-1)
	}
}

// BenchmarkReadMessage reads an 8 MiB message (the bench's big answer) through a 64 KiB reader, as the
// mux reads a keeper's socket.
func BenchmarkReadMessage(b *testing.B) {
	wire := []byte(`{"id":1,"result":"` + strings.Repeat("z", 8<<20) + `"}` + "\x00")
	r := bytes.NewReader(wire)
	br := bufio.NewReaderSize(r, 64<<10)
	b.SetBytes(int64(len(wire)))
	b.ReportAllocs()
	for b.Loop() {
		r.Reset(wire)
		br.Reset(r)
		if _, _, err := ReadMessage(br, 256<<20); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMessageDoesNotAlias: a message survives the next read.
func TestMessageDoesNotAlias(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("{\"a\":1}\x00{\"b\":2}\x00"), 16)
	first, _, _ := ReadMessage(br, 100)
	ReadMessage(br, 100)
	if string(first) != `{"a":1}` {
		t.Fatalf("first message became %q after the next read", first)
	}
}

func TestWriteMessage(t *testing.T) {
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	if err := WriteMessage(w, []byte(`{"id":`), []byte("12"), []byte(`,"method":"M"}`)); err != nil {
		t.Fatal(err)
	}
	w.Flush()
	if got := buf.String(); got != "{\"id\":12,\"method\":\"M\"}\x00" {
		t.Fatalf("WriteMessage wrote %q", got)
	}
}

// FuzzFraming: any messages without NUL, written and read back through any buffer size, come back whole
// and in order; those over the limit come back as their prefix, marked over.
func FuzzFraming(f *testing.F) {
	f.Add([]byte("{\"id\":1}\x01{\"method\":\"x\"}"), uint8(16), uint16(8))
	f.Add([]byte("\x01\x01abc"), uint8(1), uint16(0))
	f.Fuzz(func(t *testing.T, raw []byte, size uint8, limit uint16) {
		msgs := bytes.Split(bytes.ReplaceAll(raw, []byte{0}, nil), []byte{1})
		var stream bytes.Buffer
		w := bufio.NewWriter(&stream)
		for _, m := range msgs {
			if err := WriteMessage(w, m); err != nil {
				t.Fatal(err)
			}
		}
		w.Flush()
		got, overs, err := read(t, stream.Bytes(), int(size)+16, int(limit), false)
		if !errors.Is(err, io.EOF) {
			t.Fatalf("ended with %v; want io.EOF", err)
		}
		if len(got) != len(msgs) {
			t.Fatalf("read %d messages; wrote %d", len(got), len(msgs))
		}
		for i, m := range msgs {
			want, over := string(m), len(m) > int(limit)
			if over {
				want = string(m[:min(len(m), OverPrefix)])
			}
			if got[i] != want || overs[i] != over {
				t.Fatalf("message %d read as %q (over %v); want %q (over %v)", i, got[i], overs[i], want, over)
			}
		}
	})
}
