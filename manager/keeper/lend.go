package keeper

import (
	"encoding/json"
	"io"
	"net"
	"os"
	"time"

	"vibebrowser/mux/cdpwire"
)

// The pipe lent to a client (SPEC §13, issue 33): the keeper hands Chromium's pipe ends to the client with its
// hello (SCM_RIGHTS), keeps its own copies idle and watches the connection. While the client holds the pipe it
// is its only reader and writer. When the client goes, the keeper takes the pipe back: a NUL ends whatever
// message the client was half-way through writing, and the keeper reads (and drops) until the next client.
// The client makes its connection fresh itself (the mux: mux/keeperreset.go).

// client is one connection on the keeper's socket: the pipe is lent to it from its hello until it goes.
type client struct {
	nc   *net.UnixConn
	num  int           // the connection's number, for the log
	done chan struct{} // closed once the keeper holds the pipe again
}

// lend stops the keeper's reading and hands the pipe over with the hello. A hand-over that failed may still
// have reached the client, so the keeper then takes the pipe back as from a client that went.
func (k *keeper) lend(nc *net.UnixConn) (*client, error) {
	k.mu.Lock()
	k.conns++
	c := &client{nc: nc, num: k.conns, done: make(chan struct{})}
	r := k.reader
	k.reader = nil
	k.client = c
	k.disarmOrphanLocked()
	k.mu.Unlock()
	inside := k.park(r)
	hello, _ := json.Marshal(struct {
		Keeper cdpwire.Hello `json:"keeper"`
	}{cdpwire.Hello{Format: Format, PID: os.Getpid(), BrowserPID: k.br.pid, Skip: inside}})
	if err := cdpwire.SendPipe(nc, hello, k.br.toBrowser, k.br.fromBrowser, greetBound); err != nil {
		nc.Close()
		k.takeBack(c)
		close(c.done)
		return nil, err
	}
	return c, nil
}

// serveClient watches the client's connection until it goes, then takes the pipe back. A client says nothing
// on it; whatever it writes is dropped.
func (k *keeper) serveClient(c *client) {
	defer close(c.done)
	io.Copy(io.Discard, c.nc)
	c.nc.Close()
	k.takeBack(c)
}

// takeBack makes the keeper the pipe's holder again once c has gone: a NUL ends a message c may have left
// half-written (Chromium answers the fragment with an error nobody waits for), and the keeper reads again,
// dropping the rest of a message c may have left half-read. It returns once the keeper knows where Chromium's
// messages start again, the answer to a command of its own read (bounded by resetBound: a hung browser's
// next client is told to skip, Hello.Skip), so that the next client starts at a message's start.
func (k *keeper) takeBack(c *client) {
	k.mu.Lock()
	stopping := k.stopping
	k.mu.Unlock()
	if stopping {
		k.log.Info().Int("conn", c.num).Msg("client disconnected: the keeper is stopping")
		return
	}
	k.wmu.Lock()
	k.br.toBrowser.SetWriteDeadline(time.Now().Add(resetBound))
	_, err := k.br.toBrowser.Write([]byte{0})
	k.br.toBrowser.SetWriteDeadline(time.Time{})
	k.wmu.Unlock()
	if err != nil {
		k.log.Warn().Err(err).Int("conn", c.num).Msg("the NUL that ends a client's last message was not written")
	}
	k.mu.Lock()
	k.client = nil
	k.reader = k.startHolding(true)
	k.armOrphanLocked()
	k.mu.Unlock()
	answered := make(chan struct{}, 1)
	if err := k.call("Browser.getVersion", nil, "", func([]byte) { answered <- struct{}{} }); err != nil {
		k.log.Warn().Err(err).Int("conn", c.num).Msg("take-back")
	}
	t := time.NewTimer(resetBound)
	defer t.Stop()
	select {
	case <-answered:
		k.log.Info().Int("conn", c.num).Msg("client disconnected: the keeper holds the pipe again")
	case <-t.C:
		k.log.Warn().Int("conn", c.num).Dur("after", resetBound).Msg("client disconnected; the browser did not answer the keeper in time: the next client skips to a message's start")
	case <-k.quit:
	case <-k.br.done:
	}
}

// reclaim asks the client of the moment for the pipe back (the keeper closes its side of the connection; the
// client closes its pipe ends, then its side) and waits, within bound, until the keeper holds it again. It
// reports whether the keeper holds the pipe. No client is served after: the listener is closed first.
func (k *keeper) reclaim(bound time.Duration) bool {
	if k.ln != nil {
		k.ln.Close()
	}
	k.mu.Lock()
	c := k.client
	k.mu.Unlock()
	if c == nil {
		return true
	}
	c.nc.CloseWrite()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-c.done:
		return true
	case <-t.C:
		return false
	case <-k.br.done:
		return false
	}
}
