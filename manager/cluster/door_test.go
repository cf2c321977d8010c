package cluster_test

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/cluster"
	"vibebrowser/mux/sys/netrelay"
)

// identities joins hosts to a new cluster and loads their identities.
func identities(t *testing.T, hosts ...string) map[string]*cluster.Identity {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca")
	if err := cluster.Init(ca); err != nil {
		t.Fatal(err)
	}
	ids := map[string]*cluster.Identity{}
	for _, h := range hosts {
		home := t.TempDir()
		if err := cluster.Join(ca, home, h, ""); err != nil {
			t.Fatal(err)
		}
		id, err := cluster.LoadIdentity(home)
		if err != nil {
			t.Fatal(err)
		}
		ids[h] = id
	}
	return ids
}

// echoDoor is an owner's door whose one store, "shop", echoes what it is sent; it counts the handshakes and
// notes the peers let through.
type echoDoor struct {
	addr  string
	mu    sync.Mutex
	peers []string
	stop  func()
}

func startEchoDoor(t *testing.T, id *cluster.Identity) *echoDoor {
	t.Helper()
	d, err := startEchoDoorAt(t, id, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// startEchoDoorAt is startEchoDoor on addr.
func startEchoDoorAt(t *testing.T, id *cluster.Identity, addr string) (*echoDoor, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	d := &echoDoor{addr: ln.Addr().String()}
	srv := cluster.NewDoorServer(ln, id.ServerTLS(), cluster.PeerHost, func(peer, store string) (func(net.Conn), error) {
		if store != "shop" {
			return nil, errors.New("store " + store + " does not run on this host")
		}
		d.mu.Lock()
		d.peers = append(d.peers, peer)
		d.mu.Unlock()
		return func(c net.Conn) {
			go func() { io.Copy(c, c); c.Close() }()
		}, nil
	}, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var once sync.Once
	d.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("door Serve: %v", err)
			}
		})
	}
	t.Cleanup(d.stop)
	return d, nil
}

func roundTrip(t *testing.T, c net.Conn, msg string) {
	t.Helper()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	if string(buf) != msg {
		t.Fatalf("echo = %q; want %q", buf, msg)
	}
}

// A door lets a cluster host's connection through to a store that runs there, names the peer, and after the
// first connection serves from warm ones; a store that does not run there is refused with why.
func TestDoorCarriesAClient(t *testing.T) {
	ids := identities(t, "host1", "host2")
	owner := startEchoDoor(t, ids["host2"])
	dialer := cluster.NewDoorDialer(ids["host1"].ClientTLS(), zerolog.Nop())
	defer dialer.Close()
	ctx := context.Background()
	for i := range 5 {
		c, err := dialer.Dial(ctx, "host2", owner.addr, "shop")
		if err != nil {
			t.Fatalf("Dial %d: %v", i, err)
		}
		roundTrip(t, c, strings.Repeat("cdp ", 1000*(i+1)))
		c.Close()
	}
	owner.mu.Lock()
	peers := owner.peers
	owner.mu.Unlock()
	if len(peers) != 5 || peers[0] != "host1" {
		t.Errorf("the door let through %q; want host1 five times", peers)
	}
	_, err := dialer.Dial(ctx, "host2", owner.addr, "other")
	if err == nil || !strings.Contains(err.Error(), "store other does not run on this host") {
		t.Errorf("Dial of a store not there = %v; want the owner's refusal", err)
	}
}

// A door never lets through a peer that is not a host of the cluster, and a caller never talks to an owner
// whose certificate does not name the host it meant.
func TestDoorRefusesStrangers(t *testing.T) {
	ids := identities(t, "host1", "host2")
	strangers := identities(t, "host1") // another cluster's host1
	owner := startEchoDoor(t, ids["host2"])
	ctx := context.Background()

	if _, err := cluster.NewDoorDialer(strangers["host1"].ClientTLS(), zerolog.Nop()).Dial(ctx, "host2", owner.addr, "shop"); err == nil {
		t.Error("a host of another cluster got through the door")
	}
	noCert := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: ids["host1"].CAPool()}
	if _, err := cluster.NewDoorDialer(noCert, zerolog.Nop()).Dial(ctx, "host2", owner.addr, "shop"); err == nil {
		t.Error("a caller with no certificate got through the door")
	}
	if _, err := cluster.NewDoorDialer(ids["host1"].ClientTLS(), zerolog.Nop()).Dial(ctx, "host3", owner.addr, "shop"); err == nil {
		t.Error("a caller that meant host3 talked to host2's door")
	}
	owner.mu.Lock()
	defer owner.mu.Unlock()
	if len(owner.peers) != 0 {
		t.Errorf("the door let through %q; want no one", owner.peers)
	}
}

// Warm connections to an owner that restarted are dead; the next Dial opens a fresh one and works.
func TestDoorAfterTheOwnerRestarts(t *testing.T) {
	ids := identities(t, "host1", "host2")
	owner := startEchoDoor(t, ids["host2"])
	dialer := cluster.NewDoorDialer(ids["host1"].ClientTLS(), zerolog.Nop())
	defer dialer.Close()
	ctx := context.Background()
	c, err := dialer.Dial(ctx, "host2", owner.addr, "shop")
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, c, "before")
	c.Close()
	time.Sleep(200 * time.Millisecond) // the warm connections are made meanwhile
	addr := owner.addr
	owner.stop()
	// The same address again, a new door: the warm connections were to the old one.
	waitFor(t, "a new door on the same address", 5*time.Second, func() bool {
		_, err := startEchoDoorAt(t, ids["host2"], addr)
		return err == nil
	})
	c, err = dialer.Dial(ctx, "host2", addr, "shop")
	if err != nil {
		t.Fatalf("Dial after the owner restarted: %v", err)
	}
	roundTrip(t, c, "after")
	c.Close()
}

// Relay passes each side's end on: a client that closes its writing side still reads the whole answer.
func TestRelayHalfClose(t *testing.T) {
	ids := identities(t, "host1", "host2")
	owner := startEchoDoor(t, ids["host2"])
	dialer := cluster.NewDoorDialer(ids["host1"].ClientTLS(), zerolog.Nop())
	defer dialer.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		a, err := ln.Accept()
		if err != nil {
			return
		}
		b, err := dialer.Dial(context.Background(), "host2", owner.addr, "shop")
		if err != nil {
			a.Close()
			return
		}
		netrelay.Relay(a, b)
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	msg := strings.Repeat("x", 256<<10)
	go func() {
		c.Write([]byte(msg))
		c.(*net.TCPConn).CloseWrite()
	}()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(msg) {
		t.Errorf("read %d bytes back through the relay and the door; want %d, then the end", len(got), len(msg))
	}
}
