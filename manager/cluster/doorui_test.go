package cluster_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/cluster"
)

// uiDoor is an owner's door that serves its web UI to other hosts: each connection let through is answered
// "ui for PEER" and closed, and the peers are noted.
type uiDoor struct {
	addr  string
	mu    sync.Mutex
	peers []string
}

func startUIDoor(t *testing.T, id *cluster.Identity, serveUI bool) *uiDoor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &uiDoor{addr: ln.Addr().String()}
	srv := cluster.NewDoorServer(ln, id.ServerTLS(), cluster.PeerHost, func(peer, store string) (func(net.Conn), error) {
		return func(c net.Conn) { c.Close() }, nil
	}, zerolog.Nop())
	if serveUI {
		srv.ServeUI(func(peer string) (func(net.Conn), error) {
			d.mu.Lock()
			d.peers = append(d.peers, peer)
			d.mu.Unlock()
			return func(c net.Conn) {
				io.WriteString(c, "ui for "+peer+"\n")
				c.Close()
			}, nil
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("door Serve: %v", err)
		}
	})
	return d
}

func (d *uiDoor) let() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.peers...)
}

// rawDoorLine handshakes with the door at addr as conf (meaning host2), writes line and returns the door's
// answer line, or the error on the way.
func rawDoorLine(t *testing.T, conf *tls.Config, addr, line string) (string, error) {
	t.Helper()
	conf = conf.Clone()
	conf.ServerName = "host2"
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, conf)
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// A door hands a cluster host's request for the web UI to the UI, naming the verified peer; it never lets
// anything else in: a host of another cluster (even one that trusts ours), a caller with no certificate, a
// caller that speaks no TLS, nor a request that asks for a store and the UI at once. A door whose host does
// not serve its UI refuses, saying why.
func TestDoorUIOnlyForClusterHosts(t *testing.T) {
	ids := identities(t, "host1", "host2")
	strangers := identities(t, "host1")
	owner := startUIDoor(t, ids["host2"], true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	dialer := cluster.NewDoorDialer(ids["host1"].ClientTLS(), zerolog.Nop())
	defer dialer.Close()
	c, err := dialer.DialUI(ctx, "host2", owner.addr)
	if err != nil {
		t.Fatalf("DialUI from host1: %v", err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	got, err := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if err != nil || got != "ui for host1\n" {
		t.Fatalf("host1's UI connection read %q, %v; want the UI's answer for host1", got, err)
	}

	// A host of another cluster that trusts ours: the door refuses its certificate.
	stranger := strangers["host1"].AlsoTrusting(ids["host2"])
	if _, err := cluster.NewDoorDialer(stranger.ClientTLS(), zerolog.Nop()).DialUI(ctx, "host2", owner.addr); err == nil {
		t.Error("a host of another cluster got through to the UI")
	}
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ids["host1"].CAPool()}
	if _, err := cluster.NewDoorDialer(noCert, zerolog.Nop()).DialUI(ctx, "host2", owner.addr); err == nil {
		t.Error("a caller with no certificate got through to the UI")
	}
	if line, err := rawDoorLine(t, noCert, owner.addr, `{"ui":true}`); err == nil && line != "" {
		t.Errorf("a caller with no certificate was answered %q; want the connection refused", line)
	}
	plain, err := net.DialTimeout("tcp", owner.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	plain.SetDeadline(time.Now().Add(5 * time.Second))
	io.WriteString(plain, "{\"ui\":true}\nGET /store/shop HTTP/1.1\r\nHost: x\r\n\r\n")
	if b, _ := io.ReadAll(plain); strings.Contains(string(b), "ui for") {
		t.Errorf("a caller without TLS read %q; want nothing of the UI", b)
	}
	plain.Close()
	line, err := rawDoorLine(t, ids["host1"].ClientTLS(), owner.addr, `{"store":"shop","ui":true}`)
	if err != nil || !strings.Contains(line, "not both") {
		t.Errorf("a request for a store and the UI at once was answered %q, %v; want it refused, saying why", line, err)
	}
	if peers := owner.let(); len(peers) != 1 || peers[0] != "host1" {
		t.Errorf("the door handed the UI connections from %q; want host1's once", peers)
	}

	off := startUIDoor(t, ids["host2"], false)
	_, err = dialer.DialUI(ctx, "host2", off.addr)
	if err == nil || !strings.Contains(err.Error(), "does not serve its web UI") {
		t.Errorf("DialUI of a host whose UI is off = %v; want the door's refusal saying so", err)
	}
}
