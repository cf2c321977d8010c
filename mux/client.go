package mux

import (
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// CloseTakenOver is the WebSocket close code sent to a client connection displaced by a newer connection
// with the same client id.
const CloseTakenOver = 4409

// conn is one client WebSocket: one reader (the HTTP handler goroutine) and one writer goroutine.
type conn struct {
	m  *Mux
	cl *client
	ws *websocket.Conn
	q  *sendQueue

	lastRead atomic.Int64 // unix nanos of the last frame read, for idle pings

	closeOnce sync.Once
	closeCode int
	closeText string

	// Guarded by Mux.mu: the per-connection virtual Target state (Chrome scopes it to a connection).
	discover       bool
	discoverFilter []targetFilter
	autoAttach     bool
	autoFilter     []targetFilter
	downloadEvents bool
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
	m.wg.Add(1) // before Unlock: Serve's Wait starts only after it set closed under mu
	m.mu.Unlock()
	defer m.wg.Done()

	ws, err := m.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered the HTTP error
	}
	c := &conn{m: m, ws: ws, q: newSendQueue(m.cfg.QueueBytes)}
	c.lastRead.Store(time.Now().UnixNano())

	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
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
	m.touchActivityLocked()
	m.mu.Unlock()
	m.log.Info().Str("client", id).Msg("client connected")

	m.wg.Add(1)
	go func() { defer m.wg.Done(); c.writeLoop() }()
	c.readLoop()

	c.shutdown(websocket.CloseNormalClosure, "", true)
	m.mu.Lock()
	if cl.conn == c {
		cl.conn = nil
		m.dropSessionsLocked(cl)
		m.dropQueuedCreatesLocked(c)
		if !m.closed {
			m.startGraceLocked(cl)
		}
		m.log.Info().Str("client", id).Dur("grace", m.cfg.Grace).Msg("client disconnected; tabs kept for the grace period")
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
	if !c.closed() {
		c.m.log.Warn().Str("client", c.cl.id).Int("limit", c.m.cfg.QueueBytes).Msg("client send queue overflow: disconnecting it (its tabs are kept for the grace period)")
		c.shutdown(websocket.CloseTryAgainLater, "send queue overflow", true)
	}
}

func (c *conn) readLoop() {
	m := c.m
	deadline := m.cfg.PingInterval + m.cfg.PongTimeout
	c.ws.SetReadDeadline(time.Now().Add(deadline))
	c.ws.SetPongHandler(func(string) error {
		c.lastRead.Store(time.Now().UnixNano())
		return c.ws.SetReadDeadline(time.Now().Add(deadline))
	})
	for {
		b, over, err := readMessage(c.ws, m.cfg.ClientMessageLimit)
		if err != nil {
			return
		}
		now := time.Now()
		c.lastRead.Store(now.UnixNano())
		c.ws.SetReadDeadline(now.Add(deadline))
		m.msgsIn.Add(1)
		m.bytesIn.Add(uint64(len(b)))
		if over {
			id := looseID(b)
			c.send(errorFrame(id, "", -32000, "message exceeds the mux's client message limit"))
			continue
		}
		m.handleClient(c, b)
	}
}

func (c *conn) writeLoop() {
	m := c.m
	ping := time.NewTicker(m.cfg.PingInterval)
	defer ping.Stop()
	var batch []frame
	for {
		select {
		case <-c.q.wake:
		case <-ping.C:
			if time.Since(time.Unix(0, c.lastRead.Load())) >= m.cfg.PingInterval {
				if err := c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(m.cfg.WriteTimeout)); err != nil {
					c.ws.NetConn().Close()
					return
				}
			}
			continue
		}
		batch = c.q.take(batch)
		if len(batch) > 0 {
			c.ws.SetWriteDeadline(time.Now().Add(m.cfg.WriteTimeout))
			for i := range batch {
				if err := writeFrame(c.ws, batch[i]); err != nil {
					c.ws.NetConn().Close()
					return
				}
			}
			clear(batch)
		}
		if c.closed() {
			msg := websocket.FormatCloseMessage(c.closeCode, c.closeText)
			c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
			c.ws.Close()
			return
		}
	}
}

// writeFrame writes f as one WebSocket text message.
func writeFrame(ws *websocket.Conn, f frame) error {
	w, err := ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	for _, p := range [3][]byte{f.head, f.mid, f.tail} {
		if len(p) > 0 {
			if _, err := w.Write(p); err != nil {
				return err
			}
		}
	}
	return w.Close()
}

// overPrefix is how much of an over-limit message is kept to find its id.
const overPrefix = 64 << 10

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
			b = append(b, 0)[:len(b)]
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
