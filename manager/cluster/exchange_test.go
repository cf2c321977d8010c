package cluster_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/cluster"
)

// seen is what an exchange's handler was given.
type seen struct {
	peer, store string
	head        string
	body        []byte
	err         error // the body's read error
}

// exchangeDoor is a door whose exchanges of kind "keep" are handled by handle; it notes what each was given.
type exchangeDoor struct {
	addr string
	mu   sync.Mutex // guards seen
	seen []seen
}

func startExchangeDoor(t *testing.T, id *cluster.Identity, handle func(s *seen, body *cluster.Body) ([]byte, error)) *exchangeDoor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &exchangeDoor{addr: ln.Addr().String()}
	srv := cluster.NewDoorServer(ln, id.ServerTLS(), cluster.PeerHost, func(peer, store string) (func(net.Conn), error) {
		return nil, errors.New("no client's bytes here")
	}, zerolog.Nop())
	srv.HandleExchange("keep", func(ctx context.Context, peer, store string, head json.RawMessage, body *cluster.Body) ([]byte, error) {
		s := seen{peer: peer, store: store, head: string(head)}
		answer, err := handle(&s, body)
		d.mu.Lock()
		d.seen = append(d.seen, s)
		d.mu.Unlock()
		return answer, err
	})
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

func (d *exchangeDoor) all() []seen {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]seen(nil), d.seen...)
}

// readAll is a handler that takes the whole body and answers with its length.
func readAll(s *seen, body *cluster.Body) ([]byte, error) {
	s.body, s.err = io.ReadAll(body)
	if s.err != nil {
		return nil, s.err
	}
	return fmt.Appendf(nil, "took %d", len(s.body)), nil
}

// countingReader notes whether anything read it.
type countingReader struct {
	r    io.Reader
	read int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

// An exchange carries its header and a body of megabytes to the receiver, which learns the sender's name from
// its certificate and answers; the next exchanges go on warm connections and work the same.
func TestExchangeCarriesABody(t *testing.T) {
	ids := identities(t, "host1", "host3")
	door := startExchangeDoor(t, ids["host1"], readAll)
	dialer := cluster.NewDoorDialer(ids["host3"].ClientTLS(), zerolog.Nop())
	defer dialer.Close()
	ctx := context.Background()
	for i, size := range []int{3<<20 + 17, 0, 1} {
		body := make([]byte, size)
		rand.Read(body)
		answer, err := dialer.Exchange(ctx, "host1", door.addr, "shop", "keep", map[string]any{"n": i}, bytes.NewReader(body), int64(size), 64)
		if err != nil {
			t.Fatalf("Exchange %d: %v", i, err)
		}
		if want := fmt.Sprintf("took %d", size); string(answer) != want {
			t.Errorf("Exchange %d answered %q; want %q", i, answer, want)
		}
		got := door.all()[i]
		if got.peer != "host3" || got.store != "shop" || got.head != fmt.Sprintf(`{"n":%d}`, i) || !bytes.Equal(got.body, body) {
			t.Errorf("exchange %d reached the handler as peer %q, store %q, head %s, %d bytes; want host3, shop, {\"n\":%d}, the %d bytes sent",
				i, got.peer, got.store, got.head, len(got.body), i, size)
		}
	}
}

// What the receiver refuses on the header costs no transfer: the sender hears the reason and its body is never
// read. A kind the door does not answer is refused naming it.
func TestExchangeRefusedBeforeTheBody(t *testing.T) {
	ids := identities(t, "host1", "host2")
	door := startExchangeDoor(t, ids["host1"], func(s *seen, body *cluster.Body) ([]byte, error) {
		return nil, fmt.Errorf("a body of %d bytes is over the 10 this kind takes", body.Size)
	})
	dialer := cluster.NewDoorDialer(ids["host2"].ClientTLS(), zerolog.Nop())
	defer dialer.Close()
	body := &countingReader{r: bytes.NewReader(make([]byte, 1000))}
	_, err := dialer.Exchange(context.Background(), "host1", door.addr, "shop", "keep", nil, body, 1000, 64)
	if err == nil || !strings.Contains(err.Error(), "a body of 1000 bytes is over the 10 this kind takes") || !cluster.Refused(err) {
		t.Errorf("Exchange of a body the receiver refuses = %v; want its refusal", err)
	}
	if body.read != 0 {
		t.Errorf("%d bytes of the refused body were read; want none sent", body.read)
	}
	_, err = dialer.Exchange(context.Background(), "host1", door.addr, "shop", "other", nil, nil, 0, 64)
	if err == nil || !strings.Contains(err.Error(), `no exchange of kind "other"`) {
		t.Errorf("Exchange of a kind the door does not answer = %v; want a refusal naming it", err)
	}
}

// A body that ends before its size reaches the handler as io.ErrUnexpectedEOF; an answer over what the sender
// takes is an error; a sender that is no host of the cluster reaches no handler.
func TestExchangeBounds(t *testing.T) {
	ids := identities(t, "host1", "host2")
	strangers := identities(t, "host2")
	door := startExchangeDoor(t, ids["host1"], readAll)
	dialer := cluster.NewDoorDialer(ids["host2"].ClientTLS(), zerolog.Nop())
	defer dialer.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	if _, err := dialer.Exchange(ctx, "host1", door.addr, "shop", "keep", nil, strings.NewReader("only 13 bytes"), 100, 64); err == nil {
		t.Error("Exchange of a body shorter than its size succeeded")
	}
	waitFor(t, "the handler saw the short body", 5*time.Second, func() bool { return len(door.all()) == 1 })
	if got := door.all()[0]; !errors.Is(got.err, io.ErrUnexpectedEOF) {
		t.Errorf("the handler read the short body with %v; want io.ErrUnexpectedEOF", got.err)
	}

	_, err := dialer.Exchange(ctx, "host1", door.addr, "shop", "keep", nil, strings.NewReader("0123456789"), 10, 5)
	if err == nil || !strings.Contains(err.Error(), "over the 5 this exchange takes") {
		t.Errorf("Exchange whose answer (8 bytes) is over its bound (5) = %v; want an error naming the bound", err)
	}

	n := len(door.all())
	stranger := cluster.NewDoorDialer(strangers["host2"].ClientTLS(), zerolog.Nop())
	defer stranger.Close()
	if _, err := stranger.Exchange(ctx, "host1", door.addr, "shop", "keep", nil, strings.NewReader("x"), 1, 64); err == nil {
		t.Error("a host of another cluster exchanged through the door")
	}
	if got := len(door.all()); got != n {
		t.Errorf("a stranger's exchange reached the handler (%d exchanges; want %d)", got, n)
	}
}
