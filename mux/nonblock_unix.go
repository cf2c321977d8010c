//go:build unix

package mux

import (
	"errors"
	"net"
	"os"
	"syscall"
)

// writeNonBlocking writes as much of b as the socket takes at once and never waits: the upstream
// reader's inline write must not stall on a slow client. It reports how much went out. A write deadline
// that an earlier blocking write armed and that has passed since (the client was quiet for longer than the
// write timeout) is not this write's: the bytes are left to the writer goroutine, which re-arms it.
func writeNonBlocking(nc net.Conn, b []byte) (int, error) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0, nil // not a plain socket: the writer goroutine does it all
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0, err
	}
	n := 0
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			w, e := syscall.Write(int(fd), b[n:])
			if w > 0 {
				n += w
			}
			if e == syscall.EINTR {
				continue
			}
			if e != nil {
				if e != syscall.EAGAIN {
					werr = e
				}
				break
			}
		}
		return true // done either way: never park waiting for the socket
	})
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return 0, nil
	}
	if err == nil {
		err = werr
	}
	return n, err
}
