package cdpwire

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// keeperSocket listens on a fresh unix socket and serves one connection with serve, as a keeper would.
func keeperSocket(t *testing.T, serve func(uc *net.UnixConn)) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "keep-k.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		uc, err := ln.AcceptUnix()
		if err != nil {
			return
		}
		serve(uc)
		uc.Close()
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return path
}

// pipePair is a pipe as a keeper holds it: both ends non-blocking (os.Pipe), closed at cleanup.
func pipePair(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

const goodHello = `{"keeper":{"format":2,"pid":1,"browser_pid":2}}`

// TestDialTakesThePipe: the hello's two descriptors become the client's pipe, close-on-exec and non-blocking,
// and carry bytes both ways to whoever holds the other ends.
func TestDialTakesThePipe(t *testing.T) {
	toR, toW := pipePair(t)     // the client writes toW, "Chromium" reads toR
	fromR, fromW := pipePair(t) // "Chromium" writes fromW, the client reads fromR
	path := keeperSocket(t, func(uc *net.UnixConn) {
		if err := SendPipe(uc, []byte(goodHello), toW, fromR, time.Second); err != nil {
			t.Error(err)
		}
		uc.Read(make([]byte, 1)) // until the client goes
	})
	nc, h, pipe, err := Dial(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	defer pipe.Close()
	if h.BrowserPID != 2 || h.Skip {
		t.Errorf("hello = %+v; want browser_pid 2, no skip", h)
	}
	for _, f := range []*os.File{pipe.ToBrowser, pipe.FromBrowser} {
		raw, _ := f.SyscallConn()
		raw.Control(func(fd uintptr) {
			if fl, _ := unix.FcntlInt(fd, unix.F_GETFD, 0); fl&unix.FD_CLOEXEC == 0 {
				t.Errorf("%s is inherited by the manager's children; want close-on-exec", f.Name())
			}
		})
	}
	if _, err := pipe.ToBrowser.Write([]byte("to\x00")); err != nil {
		t.Fatal(err)
	}
	if b, err := bufio.NewReader(toR).ReadString(0); err != nil || b != "to\x00" {
		t.Errorf("Chromium's side read %q, %v; want the client's message", b, err)
	}
	fromW.Write([]byte("from\x00"))
	pipe.FromBrowser.SetReadDeadline(time.Now().Add(5 * time.Second)) // works: the end is non-blocking
	if b, err := bufio.NewReader(pipe.FromBrowser).ReadString(0); err != nil || b != "from\x00" {
		t.Errorf("the client read %q, %v; want Chromium's message", b, err)
	}
}

// TestDialRefusesWhatIsNotAPipe: a hello that does not come with the pipe's two ends, in order, each a
// non-blocking pipe end open the right way, is an error, and every descriptor that came with it is closed.
func TestDialRefusesWhatIsNotAPipe(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	blockR, blockW := pipePair(t)
	for _, f := range []*os.File{blockR, blockW} {
		f.Fd() // Fd puts the end in blocking mode
	}
	toR, toW := pipePair(t)
	fromR, fromW := pipePair(t)
	sock, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(t.TempDir(), "s"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	sockFile, _ := sock.File()
	defer sockFile.Close()
	tests := []struct {
		name  string
		hello string
		files []*os.File
		want  string
	}{
		{"no descriptor", goodHello, nil, "0 descriptors"},
		{"one end", goodHello, []*os.File{toW}, "1 descriptors"},
		{"three", goodHello, []*os.File{toW, fromR, file}, "3 descriptors"},
		{"the ends swapped", goodHello, []*os.File{fromR, toW}, "access mode"},
		{"the wrong ends", goodHello, []*os.File{toR, fromW}, "access mode"},
		{"a file", goodHello, []*os.File{file, fromR}, "not a pipe"},
		{"a socket", goodHello, []*os.File{toW, sockFile}, "not a pipe"},
		{"a blocking pipe", goodHello, []*os.File{blockW, blockR}, "blocking mode"},
		{"an old keeper", `{"keeper":{"format":1,"pid":1,"browser_pid":2}}`, []*os.File{toW, fromR}, "format 1"},
		{"a refusal with descriptors", `{"keeper":{"refused":"busy"}}`, []*os.File{toW, fromR}, "busy"},
		{"bytes after the hello", goodHello + "\x00{}", []*os.File{toW, fromR}, "after its hello"},
		{"not a hello", `{"id":1}`, []*os.File{toW, fromR}, "not a hello"},
		{"too many to fit", goodHello, []*os.File{toW, fromR, file, toW, fromR}, "more descriptors"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := keeperSocket(t, func(uc *net.UnixConn) {
				var fds []int
				for _, f := range tt.files {
					fds = append(fds, int(fdOf(t, f)))
				}
				var oob []byte
				if len(fds) > 0 {
					oob = syscall.UnixRights(fds...)
				}
				msg := tt.hello
				if !strings.Contains(msg, "\x00") {
					msg += "\x00"
				}
				uc.WriteMsgUnix([]byte(msg), oob, nil)
				uc.Read(make([]byte, 1))
			})
			before := pipeFDs(t)
			nc, _, pipe, err := Dial(t.Context(), path)
			if err == nil || pipe != nil || nc != nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Dial = %v, %v; want no pipe and an error naming %q", pipe, err, tt.want)
			}
			if tt.name == "a refusal with descriptors" && !errors.Is(err, ErrRefused) {
				t.Errorf("Dial = %v; want ErrRefused", err)
			}
			if after := pipeFDs(t); after > before {
				t.Errorf("%d pipe, file and socket descriptors open after the refused hello, %d before; want every one received closed", after, before)
			}
		})
	}
}

// TestDialAKeeperThatSaysNothing: a connection closed before a hello is an error, not a pipe.
func TestDialAKeeperThatSaysNothing(t *testing.T) {
	path := keeperSocket(t, func(uc *net.UnixConn) {})
	if nc, _, pipe, err := Dial(t.Context(), path); err == nil || pipe != nil || nc != nil || !strings.Contains(err.Error(), "no hello") {
		t.Fatalf("Dial = %v, %v; want no pipe and an error naming the missing hello", pipe, err)
	}
}

// TestDialAKeeperThatHangs: a keeper that writes half a hello and then nothing ends in the dial's deadline, as
// an error (a failed read says n = -1: no panic on it).
func TestDialAKeeperThatHangs(t *testing.T) {
	path := keeperSocket(t, func(uc *net.UnixConn) {
		uc.Write([]byte(`{"keeper":`))
		uc.Read(make([]byte, 1))
	})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if nc, _, pipe, err := Dial(ctx, path); err == nil || pipe != nil || nc != nil || !strings.Contains(err.Error(), "no hello") {
		t.Fatalf("Dial = %v, %v; want no pipe and an error naming the missing hello", pipe, err)
	}
}

// TestSkipRest drops the rest of a message, however long, and nothing of the next.
func TestSkipRest(t *testing.T) {
	stream := strings.Repeat("x", 100<<10) + "\x00" + `{"id":1}` + "\x00"
	br := bufio.NewReaderSize(strings.NewReader(stream), 4096)
	if err := SkipRest(br); err != nil {
		t.Fatal(err)
	}
	if b, _, err := ReadMessage(br, 1<<20); err != nil || string(b) != `{"id":1}` {
		t.Errorf("after SkipRest: %q, %v; want the next message whole", b, err)
	}
}

// fdOf is f's descriptor, read without switching it to blocking mode.
func fdOf(t *testing.T, f *os.File) uintptr {
	raw, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd uintptr
	raw.Control(func(d uintptr) { fd = d })
	return fd
}

// pipeFDs counts this process's descriptors of pipes, regular files and sockets.
func pipeFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range ents {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if strings.HasPrefix(target, "pipe:") || strings.HasPrefix(target, "/") {
			n++
		}
	}
	return n
}
