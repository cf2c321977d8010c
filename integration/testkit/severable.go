package testkit

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Severable relays loopback connections to one address until Sever is called: a host's way to the cluster,
// which a test cuts. Connections made after the cut are refused.
type Severable struct {
	Addr string // where the relay listens

	mu   sync.Mutex // guards the fields below
	cut  bool
	open []net.Conn
}

// NewSeverable relays 127.0.0.1:<free port> to to, until the test ends.
func NewSeverable(t testing.TB, to string) *Severable {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Severable{Addr: ln.Addr().String()}
	t.Cleanup(func() { ln.Close(); s.Sever() })
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", to)
			s.mu.Lock()
			if err != nil || s.cut {
				s.mu.Unlock()
				a.Close()
				if b != nil {
					b.Close()
				}
				continue
			}
			s.open = append(s.open, a, b)
			s.mu.Unlock()
			go func() { io.Copy(a, b); a.Close() }()
			go func() { io.Copy(b, a); b.Close() }()
		}
	}()
	return s
}

// Sever closes every relayed connection and refuses the next ones.
func (s *Severable) Sever() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = true
	for _, c := range s.open {
		c.Close()
	}
	s.open = nil
}
