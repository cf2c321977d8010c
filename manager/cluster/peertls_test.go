package cluster

import (
	"crypto/tls"
	"net"
	"path/filepath"
	"testing"
	"time"
)

func identityOf(t *testing.T, ca, host string) *Identity {
	t.Helper()
	home := filepath.Join(t.TempDir(), host)
	if err := Join(ca, home, host, ""); err != nil {
		t.Fatal(err)
	}
	id, err := LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// routeHandshake dials a route listener with peerTLS and reports each side's error.
func routeHandshake(t *testing.T, server, client *Identity) (srvErr, cliErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer conn.Close()
		s := tls.Server(conn, server.peerTLS())
		s.SetDeadline(time.Now().Add(10 * time.Second))
		done <- s.Handshake()
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := tls.Client(conn, client.peerTLS())
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if cliErr = c.Handshake(); cliErr == nil {
		c.Read(make([]byte, 1)) // TLS 1.3: the server's verdict on our certificate comes after our handshake
	}
	conn.Close()
	return <-done, cliErr
}

func TestRoutesTrustTheCAOnly(t *testing.T) {
	dir, otherDir := filepath.Join(t.TempDir(), "ca"), filepath.Join(t.TempDir(), "other")
	if err := Init(dir); err != nil {
		t.Fatal(err)
	}
	if err := Init(otherDir); err != nil {
		t.Fatal(err)
	}
	a, b := identityOf(t, dir, "host1"), identityOf(t, dir, "host2")
	if srvErr, cliErr := routeHandshake(t, a, b); srvErr != nil || cliErr != nil {
		t.Errorf("route between members: server %v, client %v; want it taken", srvErr, cliErr)
	}
	stranger := identityOf(t, otherDir, "host3")
	if _, cliErr := routeHandshake(t, stranger, b); cliErr == nil {
		t.Error("a member dialled a route listener of another CA's node")
	}
	if srvErr, _ := routeHandshake(t, a, stranger.AlsoTrusting(a)); srvErr == nil {
		t.Error("a member took a route from another CA's node")
	}
}
