package mux

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/mux/cdpwire"
)

// A client: its id's state (which outlives connections) and each connection's read and write loops.

// CloseTakenOver is the WebSocket close code sent to a client connection displaced by a newer connection
// with the same client id.
const CloseTakenOver = 4409

// client is a client id's state; it outlives its connections (takeover, grace, recovery).
type client struct {
	id       string
	conn     *conn // nil while disconnected
	contexts map[string]bool
	grace    *time.Timer
	graceGen int
	active   time.Time
	// viewers counts the operator's live views of this client's tabs, for the human client only: while
	// a person watches a human tab, the human client is as good as connected (no grace period runs).
	viewers int
	pw      passwords // its texts typed into password fields (passwords.go)
	// streams are the stream handles the browser answered this client with (IO.read and IO.close take only these).
	streams map[string]bool
	// host is the host whose door its connections come through (AnotherHost), "" for this host's: its
	// downloads and timeline steps are that host's (SPEC §19). It outlives the connection, for its grace.
	host string
	// bound says that host is known: set by the client's first connection (a client adopted from the
	// ownership records has none yet); hostbind.go.
	bound bool
}

// clientLocked returns the state of client id, creating it.
func (m *Mux) clientLocked(id string) *client {
	cl := m.clients[id]
	if cl == nil {
		cl = &client{id: id, contexts: map[string]bool{}, active: time.Now()}
		m.clients[id] = cl
	}
	return cl
}

func (m *Mux) connectedLocked() int {
	n := 0
	for _, cl := range m.clients {
		if cl.conn != nil {
			n++
		}
	}
	return n
}

// conn is one client WebSocket: one reader (the HTTP handler goroutine) and one writer goroutine; the
// upstream reader may also write a small batch it just queued (writeInline), under wmu.
type conn struct {
	m  *Mux
	cl *client
	ws *websocket.Conn
	q  *sendQueue

	lastRead atomic.Int64 // unix nanos of the last frame read, for idle pings

	closeOnce sync.Once
	closeCode int
	closeText string

	rd     lazyDeadline // the read deadline, re-armed by the reader goroutine only
	strict strictReader // the reader goroutine's strict parser of this connection's messages

	wmu sync.Mutex
	// wmu guards the socket's write side, inline and wd.
	inline inlineWriter
	wd     lazyDeadline

	// Guarded by Mux.mu: the per-connection virtual Target state (Chrome scopes it to a connection).
	discover       bool
	discoverFilter []targetFilter
	autoAttach     bool
	autoFilter     []targetFilter
	autoWait       bool                  // its auto-attach asked for waitForDebuggerOnStart
	downloads      map[string]dlBehavior // its own setDownloadBehavior per browser context ("": none named)
}

func (m *Mux) serveClient(w http.ResponseWriter, r *http.Request, id string) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		http.Error(w, "mux shutting down", http.StatusServiceUnavailable)
		return
	}
	if cl := m.clients[id]; (cl == nil || cl.conn == nil) && m.connectedLocked() >= m.cfg.MaxClients {
		m.mu.Unlock()
		http.Error(w, "too many clients", http.StatusServiceUnavailable)
		return
	}
	if refusal := m.otherHostsLocked(id, AnotherHost(r.Context())); refusal != "" {
		m.mu.Unlock()
		m.refusedLog.Warn().Str("client", id).Str("from", AnotherHost(r.Context())).Msg(refusal)
		http.Error(w, refusal, http.StatusConflict)
		return
	}
	m.wg.Add(1) // before Unlock: Serve's Wait starts only after it set closed under mu
	m.mu.Unlock()
	defer m.wg.Done()

	ws, err := m.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the HTTP error
	}
	c := &conn{m: m, ws: ws, q: newSendQueue(m.cfg.QueueBytes), inline: inlineWriter{nc: ws.NetConn()}}
	c.lastRead.Store(time.Now().UnixNano())

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		ws.Close()
		return
	}
	if refusal := m.otherHostsLocked(id, AnotherHost(r.Context())); refusal != "" {
		// Another host's connection of the id came first while this one was upgraded.
		m.mu.Unlock()
		ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(CloseOtherHost, refusal), time.Now().Add(time.Second))
		ws.Close()
		return
	}
	cl := m.clientLocked(id)
	c.cl = cl
	old := cl.conn
	if old != nil {
		m.dropSessionsLocked(cl)
		old.shutdown(CloseTakenOver, "client id taken over by a newer connection", false)
		m.log.Error().Str("client", id).Msg("second connection for a client id: the older one is closed with 4409, its tabs kept")
	} else if cl.grace != nil {
		cl.grace.Stop()
		cl.grace = nil
		cl.graceGen++
		m.log.Info().Str("client", id).Msg("client recovered within its grace period")
	}
	cl.conn = c
	cl.active = time.Now()
	cl.host, cl.bound = AnotherHost(r.Context()), true
	m.touchActivityLocked()
	m.mu.Unlock()
	m.log.Info().Str("client", id).Msg("client connected")

	m.wg.Add(1)
	go func() { defer m.wg.Done(); c.writeLoop() }()
	c.readLoop()

	c.shutdown(websocket.CloseNormalClosure, "", false)
	m.mu.Lock()
	if cl.conn == c {
		cl.conn = nil
		m.dropSessionsLocked(cl)
		m.cr.dropQueuedCreatesLocked(c)
		if m.cfg.Grace == Off {
			m.log.Info().Str("client", id).Msg("client disconnected; no grace period")
		} else {
			m.log.Info().Str("client", id).Int64("grace_ms", m.cfg.Grace.Milliseconds()).Msg("client disconnected; tabs kept for the grace period")
		}
		if !m.closed {
			m.startGraceLocked(cl)
		}
	}
	m.mu.Unlock()
}

// shutdown closes the connection once. A soft shutdown lets the writer send a close frame; a hard one
// (queue overflow, reader gone) closes the socket at once so a writer stuck on a slow peer is released.
func (c *conn) shutdown(code int, text string, hard bool) {
	c.closeOnce.Do(func() {
		c.closeCode, c.closeText = code, text
		c.q.close()
		if hard {
			c.ws.NetConn().Close()
		}
	})
}

func (c *conn) closed() bool {
	c.q.mu.Lock()
	defer c.q.mu.Unlock()
	return c.q.closed
}

// send queues f for the client; an overflow sends the client into its grace period.
func (c *conn) send(f frame) {
	if c.q.push(f) {
		c.m.msgsOut.Add(1)
		c.m.bytesOut.Add(uint64(f.size()))
		return
	}
	c.overflow()
}

func (c *conn) overflow() {
	if !c.closed() {
		c.m.log.Warn().Str("client", c.cl.id).Int("limit", c.m.cfg.QueueBytes).Msg("client send queue overflow: disconnecting it (its tabs are kept for the grace period)")
		c.shutdown(websocket.CloseTryAgainLater, "send queue overflow", true)
	}
}

// sendLocked queues f for c. While the upstream reader routes, the push is quiet and c is collected for
// the reader's inline write; otherwise the client's writer is woken.
func (m *Mux) sendLocked(c *conn, f frame) {
	if !m.batching {
		c.send(f)
		return
	}
	if !c.q.pushQuiet(f) {
		c.overflow()
		return
	}
	m.msgsOut.Add(1)
	m.bytesOut.Add(uint64(f.size()))
	if n := len(m.kicked); n == 0 || m.kicked[n-1] != c {
		m.kicked = append(m.kicked, c)
	}
}

func (c *conn) readLoop() {
	m := c.m
	deadline := m.cfg.PingInterval + m.cfg.PongTimeout
	c.rd.extend(c.ws.SetReadDeadline, time.Now(), deadline)
	c.ws.SetPongHandler(func(string) error {
		now := time.Now()
		c.lastRead.Store(now.UnixNano())
		c.rd.extend(c.ws.SetReadDeadline, now, deadline)
		return nil
	})
	// Control answers go through the queue: the socket's writes are the writer's (and writeInline's).
	c.ws.SetPingHandler(func(data string) error {
		now := time.Now()
		c.lastRead.Store(now.UnixNano())
		c.q.pushForce(frame{op: websocket.PongMessage, head: []byte(data)})
		c.rd.extend(c.ws.SetReadDeadline, now, deadline)
		return nil
	})
	c.ws.SetCloseHandler(func(code int, text string) error {
		c.shutdown(websocket.CloseNormalClosure, "", false) // echo the close, then hang up
		return nil
	})
	for {
		b, over, err := readMessage(c.ws, m.cfg.ClientMessageLimit)
		if err != nil {
			return
		}
		now := time.Now()
		c.lastRead.Store(now.UnixNano())
		c.rd.extend(c.ws.SetReadDeadline, now, deadline)
		m.msgsIn.Add(1)
		m.bytesIn.Add(uint64(len(b)))
		if over {
			id := cdpwire.LooseID(b)
			c.send(errorFrame(id, "", -32000, "message exceeds the mux's client message limit"))
			continue
		}
		m.handleClient(c, b)
	}
}

// writeLoop is the connection's writer goroutine. It frames messages itself into one buffered write
// per batch (gorilla's writer costs a syscall per message); pongs and close echoes come through the
// queue. Socket writes are serialised by wmu: the upstream reader may write a small batch itself first
// (writeInline), never waiting on a slow client.
func (c *conn) writeLoop() {
	m := c.m
	nc := c.ws.NetConn()
	ping := time.NewTicker(m.cfg.PingInterval)
	defer ping.Stop()
	var batch []frame
	for {
		select {
		case <-c.q.wake:
		case <-ping.C:
			if time.Since(time.Unix(0, c.lastRead.Load())) >= m.cfg.PingInterval {
				c.wmu.Lock()
				err := c.writeRestLocked(nc)
				if err == nil {
					err = c.flush(nc, append(batch[:0], frame{op: websocket.PingMessage}))
				}
				c.wmu.Unlock()
				if err != nil {
					nc.Close()
					return
				}
			}
			continue
		}
		c.wmu.Lock()
		err := c.writeRestLocked(nc)
		if err == nil {
			batch = c.q.take(batch)
			err = c.flush(nc, batch)
			clear(batch)
		}
		closed := c.closed()
		if err == nil && closed {
			nc.SetWriteDeadline(time.Now().Add(time.Second))
			bw := bufio.NewWriterSize(nc, 128)
			writeFrame(bw, frame{op: websocket.CloseMessage, head: websocket.FormatCloseMessage(c.closeCode, c.closeText)}, false)
			bw.Flush()
		}
		c.wmu.Unlock()
		if err != nil || closed {
			nc.Close()
			return
		}
	}
}

func (c *conn) writeRestLocked(nc net.Conn) error {
	if c.inline.rest == nil {
		return nil
	}
	c.wd.extend(nc.SetWriteDeadline, time.Now(), c.m.cfg.WriteTimeout)
	_, err := nc.Write(c.inline.rest)
	c.inline.rest = nil
	return err
}

// inlineMax is the most the upstream reader writes to a client itself; more goes to the writer.
const inlineMax = 16 << 10

// writeInline is the upstream reader writing what it just queued for c, saving the hand-off to c's
// writer goroutine on the hot path. It never waits: a write in progress, a large batch or a socket that
// does not take every byte at once leaves the work (and any unwritten end of a frame) to the writer.
func (c *conn) writeInline() {
	if !c.wmu.TryLock() {
		c.q.signal()
		return
	}
	defer c.wmu.Unlock()
	frames, size := c.q.depth()
	if frames == 0 {
		return
	}
	if c.inline.rest != nil || size > inlineMax || c.closed() {
		c.q.signal()
		return
	}
	// The pooled writer holds more than inlineMax, so a batch normally reaches the socket in one write.
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(&c.inline)
	for _, f := range c.q.take(nil) {
		writeFrame(bw, f, false)
	}
	err := bw.Flush()
	bw.Reset(nil)
	bufPool.Put(bw)
	if err != nil {
		c.inline.nc.Close()
		return
	}
	if c.inline.rest != nil {
		c.q.signal()
	}
}

// inlineWriter is the socket side of writeInline: it hands the socket what it takes without waiting and
// keeps the rest, which the writer goroutine sends before anything else (writeRestLocked).
type inlineWriter struct {
	nc   net.Conn
	rest []byte
}

func (w *inlineWriter) Write(b []byte) (int, error) {
	n := len(b)
	if w.rest == nil {
		k, err := writeNonBlocking(w.nc, b)
		if err != nil {
			return k, err
		}
		b = b[k:]
	}
	if len(b) > 0 {
		w.rest = append(w.rest, b...) // b is the pooled writer's buffer: copied
	}
	return n, nil
}

// bufPool holds the write buffers of client connections, taken per batch so idle clients hold none.
var bufPool = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, 32<<10) }}

func (c *conn) flush(nc net.Conn, batch []frame) error {
	if len(batch) == 0 {
		return nil
	}
	c.wd.extend(nc.SetWriteDeadline, time.Now(), c.m.cfg.WriteTimeout)
	bw := bufPool.Get().(*bufio.Writer)
	bw.Reset(nc)
	defer func() { bw.Reset(nil); bufPool.Put(bw) }()
	for i := range batch {
		if err := writeFrame(bw, batch[i], false); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// readMessage reads one message of at most limit bytes. A longer message is consumed and discarded,
// and reported with over=true and its first bytes, so the connection survives it.
func readMessage(ws *websocket.Conn, limit int) (b []byte, over bool, err error) {
	_, r, err := ws.NextReader()
	if err != nil {
		return nil, false, err
	}
	b = make([]byte, 0, 512)
	for {
		if len(b) == cap(b) {
			// Double: append's growth of large slices (1.25x) copies a multi-megabyte answer dozens of
			// times over.
			nb := make([]byte, len(b), 2*cap(b))
			copy(nb, b)
			b = nb
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > limit {
			if len(b) > overPrefix {
				b = b[:overPrefix]
			}
			if _, err := io.Copy(io.Discard, r); err != nil {
				return nil, false, err
			}
			return b, true, nil
		}
		if errors.Is(err, io.EOF) {
			return b, false, nil
		}
		if err != nil {
			return nil, false, err
		}
	}
}
