package browsers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"vibebrowser/mux"
	"vibebrowser/mux/errdefs"
	"vibebrowser/mux/sys/netrelay"
)

// Stores placed on other hosts (SPEC §19). A store's endpoint is bound on every host; on a host where the
// store does not run it checks the client's request as always (the Host, no Origin, the capability), then
// relays the connection to the store's host (Hooks.Remote dials its door). On the store's host the door hands
// the connection to the same endpoint (ServeRemote), which serves it as one from another host: a capability
// URL only (mux.FromAnotherHost).

// remoteDialBound bounds the dial of the store's host's door for one client connection.
const remoteDialBound = 10 * time.Second

// RemoteFunc says whether key's store runs on another host and, if so, how to reach it: dial opens a
// connection to the store's endpoint there.
type RemoteFunc func(key string) (dial func(ctx context.Context) (net.Conn, error), ok bool)

// relayToHost relays r's connection to the store's host: the request as it came, then the bytes both ways.
func (f *Fleet) relayToHost(w http.ResponseWriter, r *http.Request, dial func(context.Context) (net.Conn, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), remoteDialBound)
	up, err := dial(ctx)
	cancel()
	if err != nil {
		f.answerError(w, r, fmt.Errorf("%w: the store's host: %v", errdefs.ErrUnavailable, err))
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		f.answerError(w, r, fmt.Errorf("%w: this connection cannot be relayed", errdefs.ErrUnavailable))
		return
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if err := r.Write(up); err != nil {
		conn.Close()
		up.Close()
		return
	}
	if n := brw.Reader.Buffered(); n > 0 { // what the client sent after its request, read ahead
		b, _ := brw.Reader.Peek(n)
		if _, err := up.Write(b); err != nil {
			conn.Close()
			up.Close()
			return
		}
	}
	netrelay.Relay(conn, up)
}

// ServeRemote hands conn, which host's door let through for store key, to key's endpoint here. host is the
// door's verified peer (its certificate's host name): the mux keeps it for the clients the connection
// serves, whose downloads and timeline steps go back there.
func (f *Fleet) ServeRemote(key, host string, conn net.Conn) error {
	f.mu.Lock()
	s := f.byKey[key]
	f.mu.Unlock()
	var ep *endpoint
	if s != nil {
		ep = s.ep.Load()
	}
	if ep == nil {
		return fmt.Errorf("%w: store %s has no endpoint on this host", errdefs.ErrNotFound, key)
	}
	return ep.handed.hand(handedConn{Conn: conn, host: host})
}

// handedConn is a connection host's door handed over.
type handedConn struct {
	net.Conn
	host string
}

// markHanded is an endpoint server's ConnContext: a handed connection's requests are its host's.
func markHanded(ctx context.Context, c net.Conn) context.Context {
	if h, ok := c.(handedConn); ok {
		return mux.WithAnotherHost(ctx, h.host)
	}
	return ctx
}

// handedListener is the listener an endpoint's server accepts handed connections from.
type handedListener struct {
	addr  net.Addr
	conns chan net.Conn // unbuffered: a hand-over waits for the server's Accept
	done  chan struct{}
	once  sync.Once
}

func newHandedListener(addr net.Addr) *handedListener {
	return &handedListener{addr: addr, conns: make(chan net.Conn), done: make(chan struct{})}
}

// hand gives conn to the server, unless the listener is closed.
func (l *handedListener) hand(conn net.Conn) error {
	select {
	case l.conns <- conn:
		return nil
	case <-l.done:
		return fmt.Errorf("%w: the store's endpoint is closed", errdefs.ErrUnavailable)
	}
}

func (l *handedListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *handedListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *handedListener) Addr() net.Addr { return l.addr }
