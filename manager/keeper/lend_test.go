package keeper

import (
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/mux/cdpwire"
)

// TestLentPipeIsTheClients: while a client holds the pipe the keeper reads none of it, so every message of
// Chromium's reaches the client, in order, straight from Chromium.
func TestLentPipeIsTheClients(t *testing.T) {
	h := startKeeper(t)
	h.ready()
	c := h.dial()
	const n = 2000
	c.write(`{"id":1,"method":"Test.events","params":{"count":2000,"size":100}}`)
	r, before := c.until(1)
	if r.Error != nil || len(before) != n {
		t.Fatalf("Test.events: %d events before its answer %+v; want all %d (the keeper read none)", len(before), r, n)
	}
	for i, e := range before {
		var p struct {
			N int `json:"n"`
		}
		if e.Method != "Test.event" || json.Unmarshal(e.Params, &p) != nil || p.N != i {
			t.Fatalf("event %d = %s %s; want Test.event n=%d", i, e.Method, e.Params, i)
		}
	}
}

// TestTakeBackEndsAHalfWrittenMessage: a client that goes in the middle of a message leaves its first bytes
// in the pipe; the keeper's NUL ends them there, so the next client's first message reaches Chromium whole.
func TestTakeBackEndsAHalfWrittenMessage(t *testing.T) {
	h := startKeeper(t)
	h.ready()
	c := h.dial()
	c.call(1, "Test.echo", "")
	if _, err := c.pipe.ToBrowser.Write([]byte(`{"id":2,"method":"Test.echo","params":{"half":"`)); err != nil {
		t.Fatal(err)
	}
	c.leave()
	next := h.dial()
	if r := next.call(3, "Test.echo", `{"whole":true}`); r.Error != nil || r.Result == nil {
		t.Fatalf("the next client's first call = %+v; want its answer", r)
	}
	lines := h.sent()
	if !h.sawLine(`Test.echo {"whole":true}`) {
		t.Errorf("the fake read %q; want the next client's command whole", lines)
	}
	if !h.sawLine(`BAD {"id":2,"method":"Test.echo","params":{"half":"`) {
		t.Errorf("the fake read %q; want the half message ended on its own by the keeper's NUL", lines)
	}
}

// TestTakeBackDropsAHalfReadMessage: a client that goes in the middle of reading a long answer leaves its
// rest in the pipe; the keeper drops it, so the next client reads only whole messages, its own answer first.
func TestTakeBackDropsAHalfReadMessage(t *testing.T) {
	for _, size := range []int{200 << 10, 3 << 20} { // within the pipe's buffer, and well past it
		h := startKeeper(t)
		h.ready()
		c := h.dial()
		c.write(`{"id":1,"method":"Test.big","params":{"size":` + strconv.Itoa(size) + `}}`)
		part := make([]byte, 1000)
		c.pipe.FromBrowser.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.br.Read(part); err != nil {
			t.Fatal(err)
		}
		c.leave()
		next := h.dial()
		next.write(`{"id":2,"method":"Test.echo"}`)
		for {
			m := next.read()
			if !json.Valid(m) {
				t.Fatalf("size %d: the next client read %.100q…; want whole messages only", size, m)
			}
			if r := decodeReply(t, m); r.ID != nil {
				if *r.ID != 2 {
					t.Fatalf("size %d: the next client got the answer to id %d; want only its own", size, *r.ID)
				}
				break
			}
		}
	}
}

// TestAClientThatLeavesAtOnce: a connection closed before it read its hello (the pipe's ends with it) gives
// the pipe back as any client does, and the next client is served.
func TestAClientThatLeavesAtOnce(t *testing.T) {
	h := startKeeper(t)
	h.ready()
	for range 5 {
		addr, release, err := cdpwire.SockAddr(h.socket())
		if err != nil {
			t.Fatal(err)
		}
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: addr})
		release()
		syscall.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
	}
	if r := h.dial().call(1, "Test.echo", ""); r.Error != nil || r.Result == nil {
		t.Fatalf("the call after five clients that left at once = %+v; want its answer", r)
	}
}

// TestRefusalCarriesNoPipe: the second client gets the refusal and no descriptor with it, and the first
// keeps the pipe.
func TestRefusalCarriesNoPipe(t *testing.T) {
	h := startKeeper(t)
	h.ready()
	first := h.dial()
	addr, release, err := cdpwire.SockAddr(h.socket())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := net.Dial("unix", addr)
	release()
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf, oob := make([]byte, 4096), make([]byte, 256)
	n, oobn, _, _, err := nc.(*net.UnixConn).ReadMsgUnix(buf, oob)
	if err != nil || !strings.Contains(string(buf[:n]), refusedBusy) {
		t.Fatalf("second connection read %q, %v; want the refusal", buf[:n], err)
	}
	if oobn != 0 {
		t.Errorf("the refusal came with %d bytes of control message; want no descriptor", oobn)
	}
	if r := first.call(1, "Test.echo", ""); r.Error != nil {
		t.Errorf("the first client after a refusal = %+v", r.Error)
	}
}

// TestSIGTERMWhileAClientKeepsThePipe: a client that does not give the pipe back when asked does not stop
// the stop: no Browser.close (the pipe is the client's), the group's SIGTERM instead, within the bounds.
func TestSIGTERMWhileAClientKeepsThePipe(t *testing.T) {
	h := startKeeper(t)
	id := h.ready()
	c := h.dialKeeping()
	c.call(1, "Test.echo", "")
	start := time.Now()
	h.sigs <- syscall.SIGTERM
	if code := h.waitExit(15 * time.Second); code != 128+15 {
		t.Errorf("keeper exit code = %d; want %d (the fake dies of the group's SIGTERM)", code, 128+15)
	}
	if h.sawLine("Browser.close") {
		t.Errorf("the fake read %q; want no Browser.close on a pipe the client kept", h.sent())
	}
	if d := time.Since(start); d > lentBound+termBound+2*time.Second {
		t.Errorf("the stop took %v; want it within the client's and SIGTERM's bounds", d)
	}
	if groupLive(id.BrowserPGID) {
		t.Errorf("chromium's group %d lives on", id.BrowserPGID)
	}
}
