package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// Doors carry a client's bytes to the host that runs its store (SPEC §19 "Routing"). The agent's host keeps a
// loopback listener for each store placed elsewhere; each connection to it is relayed, over mutual TLS with
// the cluster's certificates, to the owner's door, which hands it to the store's endpoint as if the client had
// connected there (the capability in the URL still decides what it may do).
//
// The wire: once the TLS handshake is done, the caller writes one line, a doorRequest in JSON; the owner
// answers one line, a doorAnswer; from then on the bytes are the client's, both ways. A caller keeps a few
// connections handshaken ahead (warm), so that a client's connection waits for no handshake. A request that
// names a kind is an exchange instead (exchange.go): what a task did on a store of another host, carried back
// to the task's host.

// doorRequest opens a door connection: the store whose endpoint the bytes are for, this host's web UI
// (doorui.go), or an exchange about a store.
type doorRequest struct {
	Store string `json:"store"`
	UI    bool   `json:"ui,omitempty"`
	// Kind is an exchange's kind (exchange.go), "" for a client's bytes; Head is its header, and Size the
	// bytes of its body, which follow once the receiver asks for them.
	Kind string          `json:"kind,omitempty"`
	Head json.RawMessage `json:"head,omitempty"`
	Size int64           `json:"size,omitempty"`
}

// doorAnswer is the owner's answer: "" lets the bytes through, anything else is why not. An exchange's
// receiver answers Continue when it wants the body, and then its answer, whose Size bytes follow the line.
type doorAnswer struct {
	Error    string `json:"error,omitempty"`
	Continue bool   `json:"continue,omitempty"`
	Size     int64  `json:"size,omitempty"`
}

// Door limits.
const (
	doorLineMax   = 4 << 10          // the buffer a door connection reads its lines through
	doorHeadMax   = 64 << 10         // a request line, an exchange's header included (a download's URL)
	doorAskWithin = 10 * time.Second // from the handshake's start to the request's end
	doorIdleMax   = 60 * time.Second // how long a warm connection waits for its request
	doorWarm      = 2                // connections kept handshaken per owner
)

// HandFunc says whether a door connection for store, from the host peer, may go through: an error refuses it
// (the store does not run here) and the caller is told why; otherwise take hands the connection to the store's
// endpoint, which owns it from then on.
type HandFunc func(peer, store string) (take func(net.Conn), err error)

// DoorServer is the owner's side: the door other hosts connect to (VIBE_ADVERTISE).
type DoorServer struct {
	ln       net.Listener
	tls      *tls.Config
	peerHost func(tls.ConnectionState) (string, error)
	hand     HandFunc
	ui       UIHandFunc // nil: this host's web UI is not served to other hosts (ServeUI)
	log      zerolog.Logger
	wg       sync.WaitGroup // the connections being opened

	mu        sync.Mutex // guards the fields below
	opening   map[net.Conn]struct{}
	closed    bool
	exchanges map[string]ExchangeFunc // by kind (HandleExchange)
}

// NewDoorServer serves the door on ln: conf must require and verify the cluster's client certificates,
// peerHost names the verified peer, and hand takes each connection let through.
func NewDoorServer(ln net.Listener, conf *tls.Config, peerHost func(tls.ConnectionState) (string, error), hand HandFunc, log zerolog.Logger) *DoorServer {
	return &DoorServer{ln: ln, tls: conf, peerHost: peerHost, hand: hand, log: log, opening: map[net.Conn]struct{}{},
		exchanges: map[string]ExchangeFunc{}}
}

// Serve accepts door connections until ctx ends or the listener fails; then it closes the ones not handed on
// yet (warm ones waiting for their request among them) and waits for them.
func (d *DoorServer) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { d.ln.Close() })
	defer stop()
	defer func() {
		d.mu.Lock()
		d.closed = true
		for c := range d.opening {
			c.Close()
		}
		d.mu.Unlock()
		d.wg.Wait()
	}()
	for {
		c, err := d.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("door: %w", err)
		}
		d.mu.Lock()
		if d.closed {
			d.mu.Unlock()
			c.Close()
			continue
		}
		d.opening[c] = struct{}{}
		d.mu.Unlock()
		d.wg.Go(func() {
			defer func() {
				d.mu.Lock()
				delete(d.opening, c)
				d.mu.Unlock()
			}()
			d.open(ctx, c)
		})
	}
}

// open handshakes c, reads its request and hands it on (or answers its exchange), or refuses it with why.
func (d *DoorServer) open(ctx context.Context, raw net.Conn) {
	c := tls.Server(raw, d.tls)
	fail := func(why string) {
		c.SetWriteDeadline(time.Now().Add(time.Second))
		writeLine(c, doorAnswer{Error: why})
		c.Close()
	}
	// A warm connection waits for its request up to doorIdleMax; the handshake itself must be quick.
	c.SetDeadline(time.Now().Add(doorAskWithin))
	if err := c.Handshake(); err != nil {
		d.log.Debug().Err(err).Str("from", raw.RemoteAddr().String()).Msg("door: handshake refused")
		c.Close()
		return
	}
	peer, err := d.peerHost(c.ConnectionState())
	if err != nil {
		fail(err.Error())
		return
	}
	c.SetDeadline(time.Now().Add(doorIdleMax))
	br := bufio.NewReaderSize(c, doorLineMax)
	var req doorRequest
	if err := readLine(br, &req, doorHeadMax); err != nil {
		if !errors.Is(err, io.EOF) {
			d.log.Debug().Err(err).Str("peer", peer).Msg("door: no request")
		}
		c.Close()
		return
	}
	if req.Kind != "" && req.UI {
		fail("a door request is an exchange or asks for the web UI, not both")
		return
	}
	if req.Kind != "" {
		d.exchange(ctx, c, br, peer, req)
		return
	}
	take, err := d.route(peer, req)
	if err != nil {
		fail(err.Error())
		return
	}
	c.SetDeadline(time.Now().Add(doorAskWithin))
	if err := writeLine(c, doorAnswer{}); err != nil {
		c.Close()
		return
	}
	c.SetDeadline(time.Time{})
	take(&bufferedConn{Conn: c, r: br})
}

// bufferedConn is a connection whose first bytes were read ahead into r.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite ends the writing side (a TLS close_notify), for a relay to pass a client's end on.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Conn.Close()
}

// writeLine writes v as one line of JSON.
func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// readLine reads one line of JSON into v, refusing a line over limit bytes.
func readLine(br *bufio.Reader, v any, limit int) error {
	var line []byte
	for {
		part, err := br.ReadSlice('\n')
		if len(line)+len(part) > limit {
			return fmt.Errorf("a door line over %d bytes", limit)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			line = append(line, part...)
			continue
		}
		if err != nil {
			return err
		}
		if line == nil {
			return json.Unmarshal(part, v) // the usual short line: no copy
		}
		return json.Unmarshal(append(line, part...), v)
	}
}

// DoorDialer is the caller's side: it opens door connections to owners, from warm ones when it has them.
type DoorDialer struct {
	tls *tls.Config // the host's client configuration (its certificate, the cluster's CA)
	log zerolog.Logger

	mu   sync.Mutex // guards the fields below
	warm map[string][]*warmConn
}

// warmConn is a handshaken door connection waiting for its request.
type warmConn struct {
	c     *tls.Conn
	since time.Time
}

// NewDoorDialer dials doors with conf, which presents this host's certificate and trusts the cluster's CA.
func NewDoorDialer(conf *tls.Config, log zerolog.Logger) *DoorDialer {
	conf = conf.Clone()
	if conf.ClientSessionCache == nil {
		conf.ClientSessionCache = tls.NewLRUClientSessionCache(64)
	}
	return &DoorDialer{tls: conf, log: log, warm: map[string][]*warmConn{}}
}

// Dial opens a door connection to the store on host, whose door is at addr: the connection carries the
// client's bytes to the store's endpoint there. The owner's certificate must name host. A warm connection
// that turns out dead (the owner restarted) is followed by a fresh one.
func (d *DoorDialer) Dial(ctx context.Context, host, addr, store string) (net.Conn, error) {
	return d.dial(ctx, host, addr, doorRequest{Store: store})
}

// dial opens a door connection to host at addr for req.
func (d *DoorDialer) dial(ctx context.Context, host, addr string, req doorRequest) (net.Conn, error) {
	defer d.refill(host, addr)
	if c := d.takeWarm(host, addr); c != nil {
		if conn, err := d.ask(ctx, c, host, req); err == nil {
			return conn, nil
		} else if refused(err) {
			return nil, err
		}
	}
	c, err := d.handshake(ctx, host, addr)
	if err != nil {
		return nil, err
	}
	return d.ask(ctx, c, host, req)
}

// doorRefusal is the owner's refusal of a request.
type doorRefusal struct{ host, why string }

func (e *doorRefusal) Error() string { return fmt.Sprintf("door of host %s: %s", e.host, e.why) }

func refused(err error) bool {
	var r *doorRefusal
	return errors.As(err, &r)
}

// ask sends req on the handshaken c and reads the owner's answer.
func (d *DoorDialer) ask(ctx context.Context, c *tls.Conn, host string, req doorRequest) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	} else {
		c.SetDeadline(time.Now().Add(doorAskWithin))
	}
	if err := writeLine(c, req); err != nil {
		c.Close()
		return nil, fmt.Errorf("door of host %s: %w", host, err)
	}
	br := bufio.NewReaderSize(c, doorLineMax)
	var ans doorAnswer
	if err := readLine(br, &ans, doorLineMax); err != nil {
		c.Close()
		return nil, fmt.Errorf("door of host %s: no answer: %w", host, err)
	}
	if ans.Error != "" {
		c.Close()
		return nil, &doorRefusal{host: host, why: ans.Error}
	}
	c.SetDeadline(time.Time{})
	return &bufferedConn{Conn: c, r: br}, nil
}

// handshake dials addr and handshakes with the owner, whose certificate must name host.
func (d *DoorDialer) handshake(ctx context.Context, host, addr string) (*tls.Conn, error) {
	conf := d.tls.Clone()
	conf.ServerName = host
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: doorAskWithin}, Config: conf}
	c, err := dialer.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("door of host %s at %s: %w", host, addr, err)
	}
	return c.(*tls.Conn), nil
}

// takeWarm takes a warm connection to host at addr that has not waited too long, or nil.
func (d *DoorDialer) takeWarm(host, addr string) *tls.Conn {
	key := host + " " + addr
	d.mu.Lock()
	defer d.mu.Unlock()
	for list := d.warm[key]; len(list) > 0; list = d.warm[key] {
		w := list[len(list)-1]
		d.warm[key] = list[:len(list)-1]
		if time.Since(w.since) < doorIdleMax/2 {
			return w.c
		}
		w.c.Close()
	}
	return nil
}

// refill handshakes, in the background, up to doorWarm connections to host at addr for the next clients.
func (d *DoorDialer) refill(host, addr string) {
	key := host + " " + addr
	d.mu.Lock()
	need := doorWarm - len(d.warm[key])
	d.mu.Unlock()
	for range need {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), doorAskWithin)
			defer cancel()
			c, err := d.handshake(ctx, host, addr)
			if err != nil {
				d.log.Debug().Err(err).Str("host", host).Msg("door: warm connection")
				return
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if len(d.warm[key]) >= doorWarm {
				c.Close()
				return
			}
			d.warm[key] = append(d.warm[key], &warmConn{c: c, since: time.Now()})
		}()
	}
}

// Close closes the warm connections.
func (d *DoorDialer) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, list := range d.warm {
		for _, w := range list {
			w.c.Close()
		}
		delete(d.warm, k)
	}
}
