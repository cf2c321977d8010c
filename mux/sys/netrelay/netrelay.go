// Package netrelay copies bytes both ways between two connections, passing each side's end on.
package netrelay

import (
	"io"
	"net"
	"sync"
)

// Relay copies a to b and b to a until both directions end, passing each side's end on as a half-close where
// the connection has one (CloseWrite), else as a close; then it closes both.
func Relay(a, b net.Conn) {
	var wg sync.WaitGroup
	half := func(dst, src net.Conn) {
		io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	wg.Go(func() { half(a, b) })
	wg.Go(func() { half(b, a) })
	wg.Wait()
	a.Close()
	b.Close()
}
