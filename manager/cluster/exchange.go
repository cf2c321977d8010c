package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"time"
)

// Exchanges (SPEC §19 "Routing"): besides a client's bytes, a door carries what a task did on a store of
// another host to the task's host and back: a finished download's file, the steps of its tabs, the pictures
// after its calls. They go through the doors rather than NATS because the door's mutual TLS names the host at
// each end: each side checks the other's certificate's name, never a name a message claims (any client of
// the cluster's NATS may publish any subject), and a file may be far bigger than a NATS message.
//
// The wire, on a door connection of its own: the sender's request line names the kind, its header (Head)
// and the size of its body. With a body, the receiver first checks the header and answers a Continue line,
// or its refusal, and only then does the body cross (HTTP's 100-continue: a refused file's bytes are never
// sent); then the receiver's answer line, whose Size bytes follow it. One exchange per connection.

// Exchange bounds.
const (
	// exchangeWait bounds the sender's wait for an answer line: the receiver's work on the header (a
	// browser's picture) or on the body it took (placing a file).
	exchangeWait = time.Minute
	// exchangeIdle bounds each read and write of a body or an answer: a file of any size crosses, as long as
	// it moves.
	exchangeIdle = doorAskWithin
)

// ExchangeFunc answers one exchange of its kind from host peer (the name its certificate gives) about
// store: head is the sender's header, body its bytes. It returns the answer's bytes, or an error whose text
// is the sender's refusal. A handler that refuses on the header alone, before reading body, makes the
// sender send none of it; one that reads body reads all of it.
type ExchangeFunc func(ctx context.Context, peer, store string, head json.RawMessage, body *Body) ([]byte, error)

// Body is the bytes an exchange carries: exactly Size of them. The sender sends them once the handler first
// reads; a body that ends early reads io.ErrUnexpectedEOF.
type Body struct {
	Size  int64
	r     io.Reader    // the connection, past the request line
	ask   func() error // asks the sender for the bytes
	asked bool
	read  int64
}

// Read reads the body's next bytes, asking the sender for them at the first read.
func (b *Body) Read(p []byte) (int, error) {
	if b.read >= b.Size {
		return 0, io.EOF
	}
	if !b.asked {
		b.asked = true
		if err := b.ask(); err != nil {
			return 0, err
		}
	}
	if left := b.Size - b.read; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.read += int64(n)
	if errors.Is(err, io.EOF) && b.read < b.Size {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

// HandleExchange has the door answer exchanges of kind with fn. Call it before Serve.
func (d *DoorServer) HandleExchange(kind string, fn ExchangeFunc) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.exchanges[kind] = fn
}

// exchange answers the exchange req that peer opened on c, then closes c.
func (d *DoorServer) exchange(ctx context.Context, c *tls.Conn, br *bufio.Reader, peer string, req doorRequest) {
	defer c.Close()
	d.mu.Lock()
	fn := d.exchanges[req.Kind]
	kinds := slices.Sorted(maps.Keys(d.exchanges))
	d.mu.Unlock()
	var answer []byte
	err := fmt.Errorf("this host's door answers no exchange of kind %q: it answers %q", req.Kind, kinds)
	var body *Body
	switch {
	case fn == nil:
	case req.Size < 0:
		err = fmt.Errorf("an exchange's body of %d bytes: a size is 0 or more", req.Size)
	default:
		c.SetDeadline(time.Time{}) // each read and write below sets its own
		body = &Body{Size: req.Size, r: idleConn{c: c, r: br}, ask: func() error {
			c.SetWriteDeadline(time.Now().Add(exchangeIdle))
			return writeLine(c, doorAnswer{Continue: true})
		}}
		answer, err = fn(ctx, peer, req.Store, req.Head, body)
	}
	c.SetWriteDeadline(time.Now().Add(exchangeIdle))
	if err != nil {
		d.log.Debug().Err(err).Str("peer", peer).Str("kind", req.Kind).Str("store", req.Store).Msg("door: an exchange refused")
		writeLine(c, doorAnswer{Error: err.Error()})
		return
	}
	if body.asked && body.read < body.Size {
		// The handler broke its contract: the sender's bytes are still coming, the answer would be lost in them.
		d.log.Error().Str("kind", req.Kind).Int64("read", body.read).Int64("size", body.Size).Msg("door: an exchange's body not read whole")
		return
	}
	if err := writeLine(c, doorAnswer{Size: int64(len(answer))}); err == nil && len(answer) > 0 {
		idleConn{c: c}.Write(answer)
	}
}

// idleConn reads through r (the connection's buffered reader) and writes to c, each read and write bounded by
// exchangeIdle: a body of any size crosses as long as it moves.
type idleConn struct {
	c net.Conn
	r io.Reader
}

func (i idleConn) Read(p []byte) (int, error) {
	i.c.SetReadDeadline(time.Now().Add(exchangeIdle))
	return i.r.Read(p)
}

func (i idleConn) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		chunk := p[:min(len(p), 1<<20)]
		i.c.SetWriteDeadline(time.Now().Add(exchangeIdle))
		n, err := i.c.Write(chunk)
		written += n
		if err != nil {
			return written, err
		}
		p = p[n:]
	}
	return written, nil
}

// Exchange sends an exchange of kind about store to host, whose door is at addr: head (as JSON), then size
// bytes read from body (nil for none) once the receiver asks for them. It returns the receiver's answer, at
// most answerMax bytes of it; a refusal is an error naming the host and its reason. ctx bounds it all.
func (d *DoorDialer) Exchange(ctx context.Context, host, addr, store, kind string, head any, body io.Reader, size, answerMax int64) ([]byte, error) {
	if kind == "" {
		return nil, errors.New("an exchange needs a kind")
	}
	h, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	req := doorRequest{Store: store, Kind: kind, Head: h, Size: size}
	defer d.refill(host, addr)
	if c := d.takeWarm(host, addr); c != nil {
		answer, again, err := d.exchangeOn(ctx, c, host, req, body, answerMax)
		if err == nil || !again {
			return answer, err
		}
	}
	c, err := d.handshake(ctx, host, addr)
	if err != nil {
		return nil, err
	}
	answer, _, err := d.exchangeOn(ctx, c, host, req, body, answerMax)
	return answer, err
}

// exchangeOn sends req (and body) on the handshaken c and reads the answer. again says that nothing was
// answered (a warm connection the receiver had closed): another connection may try it afresh.
func (d *DoorDialer) exchangeOn(ctx context.Context, c *tls.Conn, host string, req doorRequest, body io.Reader, answerMax int64) (answer []byte, again bool, err error) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	fail := func(what string, err error) error {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return fmt.Errorf("door of host %s: %s: %w", host, what, err)
	}
	c.SetWriteDeadline(time.Now().Add(exchangeIdle))
	if err := writeLine(c, req); err != nil {
		return nil, true, fail("send the request", err)
	}
	br := bufio.NewReaderSize(c, doorLineMax)
	var ans doorAnswer
	c.SetReadDeadline(time.Now().Add(exchangeWait))
	if err := readLine(br, &ans, doorHeadMax); err != nil { // a refusal may quote its header
		// A warm connection the receiver closed meanwhile answers at once with its end; one that timed out
		// may have been worked on.
		var ne net.Error
		again := !errors.As(err, &ne) || !ne.Timeout()
		return nil, again && ctx.Err() == nil, fail("no answer", err)
	}
	if ans.Continue {
		if req.Size > 0 && body == nil {
			return nil, false, fail("send the body", errors.New("no body to send"))
		}
		if n, err := io.CopyN(idleConn{c: c}, body, req.Size); err != nil {
			return nil, false, fail(fmt.Sprintf("send the body (%d of %d bytes)", n, req.Size), err)
		}
		c.SetReadDeadline(time.Now().Add(exchangeWait))
		ans = doorAnswer{}
		if err := readLine(br, &ans, doorHeadMax); err != nil {
			return nil, false, fail("no answer after the body", err)
		}
	}
	switch {
	case ans.Error != "":
		return nil, false, &doorRefusal{host: host, why: ans.Error}
	case ans.Continue:
		return nil, false, fail("the answer", errors.New("asked for the body twice"))
	case ans.Size < 0 || ans.Size > answerMax:
		return nil, false, fail("the answer", fmt.Errorf("%d bytes, over the %d this exchange takes", ans.Size, answerMax))
	}
	answer = make([]byte, ans.Size)
	if _, err := io.ReadFull(idleConn{c: c, r: br}, answer); err != nil {
		return nil, false, fail("read the answer", err)
	}
	return answer, false, nil
}

// Refused reports whether err is a door's refusal (the receiver's reason, not a failure to reach it).
func Refused(err error) bool { return refused(err) }
