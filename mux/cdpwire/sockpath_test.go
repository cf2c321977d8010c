package cdpwire

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestSockAddrLongPath: a socket deeper than a sockaddr_un takes is bound and reached by its full path.
func TestSockAddrLongPath(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the long form is Linux's /proc/self/fd")
	}
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "keep-0f76dedd-c348-4687-bf74-733aada92b0e.sock")
	if len(path) <= maxSunPath {
		t.Fatalf("test path of %d bytes is short enough for a plain bind", len(path))
	}
	addr, release, err := SockAddr(path)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", addr)
	release()
	if err != nil {
		t.Fatalf("listen on %s (%d bytes) for %s: %v", addr, len(addr), path, err)
	}
	defer ln.Close()
	if fi, err := os.Lstat(path); err != nil || fi.Mode()&os.ModeSocket == 0 {
		t.Fatalf("no socket at the full path %s: %v", path, err)
	}
	_, toW := pipePair(t)
	fromR, _ := pipePair(t)
	go func() {
		if c, err := ln.Accept(); err == nil {
			SendPipe(c.(*net.UnixConn), []byte(goodHello), toW, fromR, time.Second)
			c.Close()
		}
	}()
	nc, h, pipe, err := Dial(t.Context(), path)
	if err != nil || h.BrowserPID != 2 {
		t.Fatalf("Dial(%s) = %+v, %v; want the hello", path, h, err)
	}
	pipe.Close()
	nc.Close()
	if short, release, _ := SockAddr("/tmp/x.sock"); short != "/tmp/x.sock" {
		t.Errorf("SockAddr of a short path = %s; want it unchanged", short)
	} else {
		release()
	}
}
