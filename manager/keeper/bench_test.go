package keeper

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rs/zerolog"

	"vibebrowser/mux/cdpwire"
)

// benchKeeper is a keeper whose "Chromium" is a goroutine in this process answering every command at once
// over real pipes, so what a benchmark measures is the lent pipe's own cost.
func benchKeeper(b *testing.B) (socket string) {
	b.Helper()
	childIn, toBrowser, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fromBrowser, childOut, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	growPipe(toBrowser)
	growPipe(fromBrowser)
	dir := b.TempDir()
	k := &keeper{
		cfg:      Config{Key: "b", RunDir: dir},
		log:      zerolog.Nop(),
		socket:   filepath.Join(dir, "b.sock"),
		idPath:   filepath.Join(dir, "b.json"),
		quit:     make(chan struct{}),
		calls:    map[int64]func([]byte){},
		nextCall: firstCallID,
		br:       &browser{pid: os.Getpid(), toBrowser: toBrowser, fromBrowser: fromBrowser, done: make(chan struct{})},
	}
	echoed := make(chan struct{})
	go func() {
		defer close(echoed)
		defer childOut.Close()
		br := bufio.NewReaderSize(childIn, bufSize)
		bw := bufio.NewWriterSize(childOut, bufSize)
		for {
			msg, err := br.ReadSlice(0)
			if err != nil {
				return
			}
			id := msg[len(`{"id":`):bytes.IndexByte(msg, ',')]
			cdpwire.WriteMessage(bw, []byte(`{"id":`), id, []byte(`,"result":{"value":"ok"}}`))
			if br.Buffered() == 0 {
				bw.Flush()
			}
		}
	}()
	if err := k.listen(); err != nil {
		b.Fatal(err)
	}
	k.reader = k.startHolding(false)
	k.wg.Add(1)
	go func() { defer k.wg.Done(); k.acceptLoop() }()
	b.Cleanup(func() {
		close(k.br.done)
		k.stop()
		childIn.Close()
		<-echoed
	})
	return k.socket
}

// BenchmarkLentPipeRoundTrip: commands pipelined 64 deep on the pipe the keeper lent, each answered.
func BenchmarkLentPipeRoundTrip(b *testing.B) {
	socket := benchKeeper(b)
	nc, _, pipe, err := cdpwire.Dial(context.Background(), socket)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	defer pipe.Close()
	bench(b, pipe.ToBrowser, bufio.NewReaderSize(pipe.FromBrowser, bufSize))
}

// BenchmarkPlainRelayRoundTrip is the same through a plain TCP relay (io.Copy both ways) to the same
// echoing "Chromium", for comparison.
func BenchmarkPlainRelayRoundTrip(b *testing.B) {
	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer echo.Close()
	go func() {
		c, err := echo.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		br, bw := bufio.NewReaderSize(c, bufSize), bufio.NewWriterSize(c, bufSize)
		for {
			msg, err := br.ReadSlice(0)
			if err != nil {
				return
			}
			id := msg[len(`{"id":`):bytes.IndexByte(msg, ',')]
			cdpwire.WriteMessage(bw, []byte(`{"id":`), id, []byte(`,"result":{"value":"ok"}}`))
			if br.Buffered() == 0 {
				bw.Flush()
			}
		}
	}()
	relay, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer relay.Close()
	go func() {
		c, err := relay.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", echo.Addr().String())
		if err != nil {
			return
		}
		go func() { bufio.NewReader(up).WriteTo(c); c.Close() }()
		bufio.NewReader(c).WriteTo(up)
		up.Close()
	}()
	nc, err := net.Dial("tcp", relay.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	bench(b, nc, bufio.NewReaderSize(nc, bufSize))
}

func bench(b *testing.B, w io.Writer, br *bufio.Reader) {
	const depth = 64
	msg := func(id int) []byte {
		return append(strconv.AppendInt([]byte(`{"id":`), int64(id), 10), `,"method":"Runtime.evaluate","params":{"expression":"1+1"},"sessionId":"S1"}`...)
	}
	bw := bufio.NewWriterSize(w, bufSize)
	b.ReportAllocs()
	b.ResetTimer()
	sent, got := 0, 0
	for got < b.N {
		for sent < b.N && sent-got < depth {
			sent++
			cdpwire.WriteMessage(bw, msg(sent))
		}
		bw.Flush()
		for got < sent && (got < sent-depth/2 || sent == b.N) {
			if _, err := br.ReadSlice(0); err != nil {
				b.Fatal(err)
			}
			got++
		}
	}
}
