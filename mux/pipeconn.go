package mux

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"vibebrowser/mux/cdpwire"
)

// upConn is the upstream connection as the upstream uses it: a byte stream both ways, a write deadline, and
// Close, which ends a read or write in progress.
type upConn interface {
	io.ReadWriteCloser
	SetWriteDeadline(t time.Time) error
}

// pipeConn is Chromium's DevTools pipe as its keeper lent it to the mux (SPEC §13): reads come from the end
// Chromium writes, writes go to the end it reads, and the keeper's connection is watched. The keeper going,
// or closing its side to ask for the pipe back, closes the pipe: with the keeper gone, the mux's copy must not
// keep a browser alive that its keeper would have taken down.
type pipeConn struct {
	pipe   *cdpwire.Pipe
	keeper *net.UnixConn
	once   sync.Once
	err    error
}

// newPipeConn holds pipe, lent over keeper, and watches keeper until either closes.
func newPipeConn(keeper *net.UnixConn, pipe *cdpwire.Pipe) *pipeConn {
	c := &pipeConn{pipe: pipe, keeper: keeper}
	go c.watch()
	return c
}

// watch waits for the keeper's side of the connection to end (it says nothing on it), then closes the pipe.
// It ends when Close closes the connection, too.
func (c *pipeConn) watch() {
	io.Copy(io.Discard, c.keeper)
	c.Close()
}

func (c *pipeConn) Read(b []byte) (int, error)  { return c.pipe.FromBrowser.Read(b) }
func (c *pipeConn) Write(b []byte) (int, error) { return c.pipe.ToBrowser.Write(b) }

func (c *pipeConn) SetWriteDeadline(t time.Time) error { return c.pipe.ToBrowser.SetWriteDeadline(t) }

// setDeadline bounds both ends' reads and writes, for the exchange that opens a connection.
func (c *pipeConn) setDeadline(t time.Time) {
	c.pipe.FromBrowser.SetReadDeadline(t)
	c.pipe.ToBrowser.SetWriteDeadline(t)
}

// Close gives the pipe back: the mux's ends first (Close returns once no read or write of them is in
// progress), then the connection, whose end tells the keeper it holds the pipe again.
func (c *pipeConn) Close() error {
	c.once.Do(func() { c.err = errors.Join(c.pipe.Close(), c.keeper.Close()) })
	return c.err
}
