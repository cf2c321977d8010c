package forward

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// splice copies both ways until either side closes, or neither moved a byte for idle.
func splice(a, b net.Conn, idle time.Duration) {
	var last atomicTime
	last.touch()
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		defer func() { done <- struct{}{} }()
		buf := make([]byte, 32<<10)
		for {
			src.SetReadDeadline(time.Now().Add(idle))
			n, err := src.Read(buf)
			if n > 0 {
				last.touch()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() && time.Since(last.get()) < idle {
					continue // the other way is busy: a long download with a quiet request side
				}
				return
			}
		}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	a.Close()
	b.Close()
	<-done
}

// atomicTime is the last time a byte moved, read and written by both directions.
type atomicTime struct{ ns atomic.Int64 }

func (t *atomicTime) touch()         { t.ns.Store(time.Now().UnixNano()) }
func (t *atomicTime) get() time.Time { return time.Unix(0, t.ns.Load()) }
