package mux

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"vibebrowser/mux/cdpwire"
)

// upTransport is how a test's mux reaches its fake browser.
type upTransport string

// The two transports of the mux's upstream.
const (
	overWebSocket upTransport = "websocket" // the browser's debugging port
	overKeeper    upTransport = "keeper"    // the pipe a keeper lends (SPEC §13)
)

// forEachTransport runs test over each transport, as subtests named by it.
func forEachTransport(t *testing.T, test func(t *testing.T, tr upTransport)) {
	t.Helper()
	for _, tr := range []upTransport{overWebSocket, overKeeper} {
		t.Run(string(tr), func(t *testing.T) { test(t, tr) })
	}
}

// newFakeBrowserOn is a fake browser reached over tr.
func newFakeBrowserOn(t *testing.T, tr upTransport) *fakeBrowser {
	t.Helper()
	fb := newFakeBrowser(t)
	if tr == overKeeper {
		fb.kp = newFakeKeeper(t, fb)
	}
	return fb
}

// fakeKeeper is the fake browser's keeper front, speaking the keeper's protocol (manager/keeper's package
// doc) on a real unix socket with a real pipe: on accept a hello with the pipe's two ends, or a refusal while
// another client holds it; then the mux reads and writes the pipe, and the fake browser answers on it, as
// Chromium does, one connection for its whole life (what a client leaves attached stays attached). When
// the mux goes, the keeper front takes the pipe back: what the fake wrote and nobody read is dropped, and a
// NUL ends what the mux left half-written.
type fakeKeeper struct {
	fb     *fakeBrowser
	socket string
	ln     *net.UnixListener
	wg     sync.WaitGroup // the accept loop, the pipe's reader and each connection's watch
	junk   []string       // messages from the mux that are not JSON (a WebSocket frame, say); guarded by fb.mu
	back   chan struct{}  // closed once the pipe lent last is back; guarded by fb.mu
	nuls   int            // empty messages read: the NULs of take-backs that ended nothing; guarded by fb.mu

	// The pipe: the mux writes toW and reads fromR (the ends lent), the fake reads toR and writes fromW.
	toR, toW, fromR, fromW *os.File
}

func newFakeKeeper(t *testing.T, fb *fakeBrowser) *fakeKeeper {
	t.Helper()
	// Not t.TempDir(): a unix socket's path must fit in 108 bytes, and test names make those long.
	dir, err := os.MkdirTemp("", "fk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return newFakeKeeperAt(t, fb, filepath.Join(dir, "keep-fake.sock"))
}

// newFakeKeeperAt is fb's keeper front listening on socket, where another keeper may have listened before
// (a relaunched browser's keeper takes its store's socket path).
func newFakeKeeperAt(t *testing.T, fb *fakeBrowser, socket string) *fakeKeeper {
	t.Helper()
	kp := &fakeKeeper{fb: fb, socket: socket}
	var err error
	if kp.toR, kp.toW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	if kp.fromR, kp.fromW, err = os.Pipe(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*os.File{kp.toW, kp.fromW} { // as the keeper does: room for a test's big messages
		if raw, err := f.SyscallConn(); err == nil {
			raw.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
		}
	}
	if kp.ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: kp.socket, Net: "unix"}); err != nil {
		t.Fatal(err)
	}
	kp.wg.Add(2)
	go kp.accept()
	go kp.read()
	t.Cleanup(func() {
		kp.ln.Close()
		fb.drop()
		kp.toR.Close() // ends the reader, whoever still holds a copy of the end the mux writes
		kp.wg.Wait()
		for _, f := range []*os.File{kp.toW, kp.fromR, kp.fromW} {
			f.Close()
		}
		if len(kp.junk) > 0 {
			t.Errorf("the mux wrote %d messages to the keeper that are not JSON, the first %.200q", len(kp.junk), kp.junk[0])
		}
	})
	return kp
}

func (kp *fakeKeeper) accept() {
	defer kp.wg.Done()
	for {
		nc, err := kp.ln.AcceptUnix()
		if err != nil {
			return
		}
		kp.wg.Add(1)
		go kp.serve(nc)
	}
}

// read is the fake browser's end of the pipe: every message the mux writes, answered by the same browser
// logic as the WebSocket front. An empty message is the keeper's NUL after a client that wrote nothing more.
func (kp *fakeKeeper) read() {
	defer kp.wg.Done()
	br := bufio.NewReader(kp.toR)
	for {
		b, _, err := cdpwire.ReadMessage(br, 1<<30)
		if err != nil {
			return
		}
		if len(b) == 0 {
			kp.fb.mu.Lock()
			kp.nuls++
			kp.fb.mu.Unlock()
			continue
		}
		if !json.Valid(b) {
			kp.fb.mu.Lock()
			kp.junk = append(kp.junk, string(b))
			kp.fb.mu.Unlock()
		}
		kp.fb.handle(b)
	}
}

// serve is one client's connection: the hello with the pipe, or a refusal; then the watch until the client
// gives the pipe back (or the fake drops the connection), and the take-back.
func (kp *fakeKeeper) serve(nc *net.UnixConn) {
	defer kp.wg.Done()
	fb := kp.fb
	fb.mu.Lock()
	switch {
	case fb.refusing: // an outage: the keeper is going, it says nothing
		fb.mu.Unlock()
		nc.Close()
		return
	case fb.link != nil: // one client at a time
		fb.refusals++
		fb.mu.Unlock()
		writeFakeHello(nc, cdpwire.Hello{Refused: "another client holds the browser's pipe"})
		nc.Close()
		return
	}
	prev, back := kp.back, make(chan struct{})
	kp.back = back
	defer close(back)
	fb.mu.Unlock()
	if prev != nil {
		<-prev // a client that went: the pipe is lent again once it is back, as the keeper's accept loop does
	}
	l := &fakeKeeperLink{nc: nc, w: kp.fromW}
	fb.mu.Lock()
	fb.link = l
	fb.conns++
	fb.mu.Unlock()
	hello, _ := json.Marshal(map[string]cdpwire.Hello{"keeper": {Format: cdpwire.Format, PID: os.Getpid(), BrowserPID: os.Getpid()}})
	if err := cdpwire.SendPipe(nc, hello, kp.toW, kp.fromR, time.Second); err == nil {
		io.Copy(io.Discard, nc)
	}
	nc.Close()
	kp.takeBack(l)
}

// takeBack makes the fake browser write nothing more to the pipe, drops what it wrote that nobody read (the
// pipe is then at a message's end) and ends with a NUL what the mux left half-written.
func (kp *fakeKeeper) takeBack(l *fakeKeeperLink) {
	kp.fb.disconnected(l) // under fb.mu: no write of the fake's is in progress after it
	buf := make([]byte, 64<<10)
	for {
		kp.fromR.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := kp.fromR.Read(buf); err != nil {
			break
		}
	}
	kp.fromR.SetReadDeadline(time.Time{})
	kp.toW.Write([]byte{0})
}

func writeFakeHello(nc net.Conn, h cdpwire.Hello) {
	b, _ := json.Marshal(map[string]cdpwire.Hello{"keeper": h})
	nc.Write(append(b, 0))
}

// fakeKeeperLink is the pipe while a client holds it: the fake browser writes its messages to w; nc is the
// client's connection to the keeper front, whose closing takes the pipe back.
type fakeKeeperLink struct {
	nc *net.UnixConn
	w  *os.File
}

func (l *fakeKeeperLink) send(msg string) { l.w.Write(append([]byte(msg), 0)) }

// sendPieces writes each piece, and the NUL, on its own, a moment apart, so that the mux's reader gets
// them in separate reads.
func (l *fakeKeeperLink) sendPieces(pieces ...string) {
	for _, p := range append(pieces, "\x00") {
		l.writeApart(p)
	}
}

// writeApart writes raw bytes (the caller's NULs included) after a pause that lets the reader take what
// came before.
func (l *fakeKeeperLink) writeApart(raw string) {
	time.Sleep(time.Millisecond)
	l.w.Write([]byte(raw))
}

func (l *fakeKeeperLink) ping(string) {}

// close drops the client's connection, as a keeper that went would: the mux gives the pipe back.
func (l *fakeKeeperLink) close() { l.nc.Close() }

// sendRaw writes raw bytes on the pipe to the mux, in the given pieces, each a moment apart: a test's own
// framing, NULs included.
func (fb *fakeBrowser) sendRaw(pieces ...string) {
	fb.t.Helper()
	fb.mu.Lock()
	defer fb.mu.Unlock()
	l, ok := fb.link.(*fakeKeeperLink)
	if !ok {
		fb.t.Fatal("sendRaw: no client holds the keeper front's pipe")
	}
	for _, p := range pieces {
		l.writeApart(p)
	}
}

// keeperRefusals counts the connections the keeper front refused because another client held the pipe.
func (fb *fakeBrowser) keeperRefusals() int {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.refusals
}
