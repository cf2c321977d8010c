package keeper

import (
	"bufio"
	"fmt"
	"net"
	"sync"

	"vibebrowser/mux/cdpwire"
)

// The relay, both ways. Each direction is one goroutine that reads a message, looks at its first bytes
// (cdpwire.Scan), writes it to the other side's buffered writer and flushes only when its reader holds no whole
// message more: a burst goes out in few writes, a lone message at once. A slow reader on either side blocks
// the goroutine writing to it (bounded buffers, no queue); nothing is copied but into the writer.

// client is one connection on the keeper's socket, served from its hello until it goes.
type client struct {
	nc   net.Conn
	num  int           // the connection's number, for the log
	done chan struct{} // closed once the keeper is done with it, its reset finished

	inflight map[int64]flight // the client's commands sent to Chromium and not answered; guarded by keeper.mu

	wmu sync.Mutex
	// wmu guards bw: the browser relay writes Chromium's messages, the client's relay the keeper's errors.
	bw *bufio.Writer
}

// send writes one message of the keeper's own to the client, flushed.
func (c *client) send(msg []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := cdpwire.WriteMessage(c.bw, msg); err != nil {
		return err
	}
	return c.bw.Flush()
}

// relayFromClient relays the client's messages to Chromium until the client goes (the error says how) or
// the pipe fails.
func (k *keeper) relayFromClient(c *client) error {
	fr := cdpwire.NewReader(bufio.NewReaderSize(c.nc, bufSize), k.cfg.Limit)
	unflushed := false // the pipe's writer holds what this client sent since its last flush
	for {
		msg, over, err := fr.Next()
		if err != nil {
			if unflushed {
				k.writePipe(nil, true) // what the client sent before it went still goes
			}
			return err
		}
		if over {
			k.refuseOversized(c, msg)
			msg = nil
		} else if !k.admitCommand(c, msg) {
			msg = nil
		}
		flush := !fr.Whole()
		if msg != nil || unflushed && flush {
			if err := k.writePipe(msg, flush); err != nil {
				return fmt.Errorf("pipe to chromium: %w", err)
			}
			unflushed = !flush
		}
	}
}

// writePipe writes msg (when not nil) to Chromium, and flushes when asked.
func (k *keeper) writePipe(msg []byte, flush bool) error {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	if msg != nil {
		if err := cdpwire.WriteMessage(k.pw, msg); err != nil {
			return err
		}
	}
	if flush {
		return k.pw.Flush()
	}
	return nil
}

// admitCommand records a client's command as in flight and reports whether to send it; a refused one is
// answered here. A message with no id the keeper can read goes as it is, untracked: Chrome answers it
// with an error of its own, which no client is waiting for by id.
func (k *keeper) admitCommand(c *client, msg []byte) bool {
	m, err := cdpwire.ScanCommand(msg)
	if err != nil {
		return true
	}
	idBytes := m.ID(msg)
	id, ok := parseID(idBytes)
	if !ok {
		return true
	}
	refusal := k.admit(c, id, m.Method == attachToTarget || m.Method == attachToBrowserTarget)
	if refusal == "" {
		return true
	}
	k.log.Warn().Int("conn", c.num).Int64("id", id).Msg(refusal)
	c.send(errorMessage(idBytes, m.SessionID, refusal)) // a client gone meanwhile ends its relay on the next read
	return false
}

// refuseOversized answers a client's message over the limit with an error to its id, read from the message's
// first bytes; it never reaches Chromium, and the connection lives on.
func (k *keeper) refuseOversized(c *client, prefix []byte) {
	m, _ := cdpwire.ScanCommand(prefix) // cut short: its id, when it came first
	if !m.HasID() {
		k.log.Warn().Int("conn", c.num).Int("limit", k.cfg.Limit).
			Msg("client message over the limit with no id in its first bytes: dropped")
		return
	}
	k.log.Warn().Int("conn", c.num).Int("limit", k.cfg.Limit).Bytes("id", m.ID(prefix)).Msg("client message over the limit: refused")
	c.send(errorMessage(m.ID(prefix), m.SessionID, fmt.Sprintf(
		"keeper: message over the client message limit of %d bytes: not sent to the browser", k.cfg.Limit)))
}

// relayFromBrowser relays Chromium's messages to the client of the moment until the pipe closes: answers
// to the keeper's commands are consumed, answers to a gone client's ids and events with no client are
// dropped, and the sessions they attach and detach are tracked either way.
func (k *keeper) relayFromBrowser() {
	fr := cdpwire.NewReader(bufio.NewReaderSize(k.br.fromBrowser, bufSize), upstreamLimit)
	var unflushed *client // the client whose writer holds what was forwarded since its last flush
	for {
		msg, over, err := fr.Next()
		if err != nil {
			return // EOF: Chromium has gone; the waiter says how
		}
		var to *client
		if over {
			k.browserOversized(msg)
		} else {
			to = k.route(msg)
		}
		if unflushed != nil && unflushed != to {
			unflushed.flush()
			unflushed = nil
		}
		if to != nil {
			to.wmu.Lock()
			err := cdpwire.WriteMessage(to.bw, msg)
			to.wmu.Unlock()
			if err != nil {
				to.nc.Close() // its relay ends, its reset runs
			} else {
				unflushed = to
			}
		}
		if unflushed != nil && !fr.Whole() {
			unflushed.flush()
			unflushed = nil
		}
	}
}

// flush flushes what the browser relay wrote to the client. A failed write closes the connection, so the
// client's relay ends and its reset runs; the writer keeps the error, so later writes fail at once.
func (c *client) flush() {
	c.wmu.Lock()
	err := c.bw.Flush()
	c.wmu.Unlock()
	if err != nil {
		c.nc.Close()
	}
}

// route reads an answer's id or an event's method and returns the client to forward the message to.
func (k *keeper) route(msg []byte) *client {
	m, err := cdpwire.Scan(msg)
	switch {
	case err != nil:
		return k.current() // not a message the scan reads: the client gets it as it is
	case m.HasID():
		return k.routeAnswer(m.ID(msg), msg)
	default:
		return k.routeEvent(m.Method, m.SessionID, msg)
	}
}

// browserOversized drops a message of Chromium's over the limit; when it answers the client's command, the
// client gets an error instead, so it does not wait forever.
func (k *keeper) browserOversized(prefix []byte) {
	k.log.Warn().Int("limit", upstreamLimit).Msg("chromium message over the limit: dropped")
	m, err := cdpwire.Scan(prefix)
	if err != nil || !m.HasID() {
		return
	}
	id := m.ID(prefix)
	if to := k.routeAnswer(id, prefix); to != nil {
		to.send(errorMessage(id, "", fmt.Sprintf(
			"keeper: the browser's answer is over the limit of %d bytes: dropped", upstreamLimit)))
	}
}
