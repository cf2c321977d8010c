package mux

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"vibebrowser/mux/cdpwire"
)

// upTransport is how a test's mux reaches its fake browser.
type upTransport string

// The two transports of the mux's upstream.
const (
	overWebSocket upTransport = "websocket" // the browser's debugging port
	overKeeper    upTransport = "keeper"    // a keeper's unix socket (SPEC §13)
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
// doc) on a real unix socket: on accept a hello, or a refusal while another client is connected, then
// NUL-ended CDP messages both ways, relayed to and from the same browser logic as the WebSocket front.
type fakeKeeper struct {
	fb     *fakeBrowser
	socket string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and each connection's reader
	junk   []string       // messages from the mux that are not JSON (a WebSocket frame, say); guarded by fb.mu
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
	if kp.ln, err = net.Listen("unix", kp.socket); err != nil {
		t.Fatal(err)
	}
	kp.wg.Add(1)
	go kp.accept()
	t.Cleanup(func() {
		kp.ln.Close()
		fb.drop()
		kp.wg.Wait()
		if len(kp.junk) > 0 {
			t.Errorf("the mux wrote %d messages to the keeper that are not JSON, the first %.200q", len(kp.junk), kp.junk[0])
		}
	})
	return kp
}

func (kp *fakeKeeper) accept() {
	defer kp.wg.Done()
	for {
		nc, err := kp.ln.Accept()
		if err != nil {
			return
		}
		kp.wg.Add(1)
		go kp.serve(nc)
	}
}

// serve is one client's connection: the keeper's hello, then its messages to the browser until it goes.
func (kp *fakeKeeper) serve(nc net.Conn) {
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
		writeFakeHello(nc, cdpwire.Hello{Refused: "another client is connected"})
		nc.Close()
		return
	}
	l := &fakeKeeperLink{nc: nc}
	writeFakeHello(nc, cdpwire.Hello{Format: cdpwire.Format, PID: os.Getpid(), BrowserPID: os.Getpid()})
	fb.connectLocked(l)
	fb.mu.Unlock()
	br := bufio.NewReader(nc)
	for {
		b, _, err := cdpwire.ReadMessage(br, 1<<30)
		if err != nil {
			fb.disconnected(l)
			nc.Close()
			return
		}
		if !json.Valid(b) {
			fb.mu.Lock()
			kp.junk = append(kp.junk, string(b))
			fb.mu.Unlock()
		}
		fb.handle(b)
	}
}

func writeFakeHello(nc net.Conn, h cdpwire.Hello) {
	b, _ := json.Marshal(map[string]cdpwire.Hello{"keeper": h})
	nc.Write(append(b, 0))
}

// fakeKeeperLink is a client's connection to the keeper front.
type fakeKeeperLink struct{ nc net.Conn }

func (l *fakeKeeperLink) send(msg string) { l.nc.Write(append([]byte(msg), 0)) }

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
	l.nc.Write([]byte(raw))
}

func (l *fakeKeeperLink) ping(string) {}

func (l *fakeKeeperLink) close() { l.nc.Close() }

// sendRaw writes raw bytes on the keeper's connection to the mux, in the given pieces, each a moment
// apart: a test's own framing, NULs included.
func (fb *fakeBrowser) sendRaw(pieces ...string) {
	fb.t.Helper()
	fb.mu.Lock()
	defer fb.mu.Unlock()
	l, ok := fb.link.(*fakeKeeperLink)
	if !ok {
		fb.t.Fatal("sendRaw: no client on the keeper front")
	}
	for _, p := range pieces {
		l.writeApart(p)
	}
}

// keeperRefusals counts the connections the keeper front refused because another client held it.
func (fb *fakeBrowser) keeperRefusals() int {
	fb.mu.Lock()
	defer fb.mu.Unlock()
	return fb.refusals
}
