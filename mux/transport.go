package mux

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"vibebrowser/mux/cdpwire"
)

// The upstream's two transports: the browser's own DevTools WebSocket (a debugging port), and a keeper's
// unix socket (SPEC §13), behind which the keeper relays Chromium's --remote-debugging-pipe. Everything
// above the transport (routing, ownership, the writer's batching, the probe, the reconnects) is the same.

// transport frames the messages of one upstream connection. write puts one message, assembled from a
// frame's parts, into the connection's buffered writer and does not flush (the writer flushes once per
// batch). read returns the next whole message, one over limit as its first bytes with over set so that
// the connection outlives it, and an error once the connection ends.
type transport interface {
	write(bw *bufio.Writer, f frame) error
	read(br *bufio.Reader, limit int) (msg []byte, over bool, err error)
}

// wsTransport is the browser's WebSocket: the mux's frames are masked, as a client's must be (RFC 6455
// §5.3), and the browser's pings are answered by pongs queued on the connection's own queue.
type wsTransport struct {
	pong func(payload []byte) // made once per connection, not per message
}

func newWSTransport(q *sendQueue) *wsTransport {
	return &wsTransport{pong: func(p []byte) { q.pushForce(frame{op: websocket.PongMessage, head: p}) }}
}

func (t *wsTransport) write(bw *bufio.Writer, f frame) error { return writeFrame(bw, f, true) }

func (t *wsTransport) read(br *bufio.Reader, limit int) ([]byte, bool, error) {
	return readWireMessage(br, limit, t.pong)
}

// keeperTransport is a keeper's socket: cdpwire's messages, each ended by a NUL. It has no control
// frames, so there is no ping to answer and no pong is ever written.
type keeperTransport struct{}

func (keeperTransport) write(bw *bufio.Writer, f frame) error {
	if f.op != 0 {
		return nil // a WebSocket control frame has no form on a pipe; only wsTransport queues one
	}
	return cdpwire.WriteMessage(bw, f.head, f.mid, f.tail)
}

func (keeperTransport) read(br *bufio.Reader, limit int) ([]byte, bool, error) {
	return cdpwire.ReadMessage(br, limit)
}

// dialKeeper connects to the keeper at socket and takes the browser's pipe it lends (SPEC §13): from then on
// the mux alone reads and writes the pipe, and the returned connection reads and writes it. It asks the
// browser for Browser.getVersion, for the mux's /json/version, then makes the connection fresh (freshen) before
// any client's message goes on it. A keeper lends the pipe of a hung browser too, so only the browser's
// answers make the dial good: a browser that does not answer within PongTimeout (and ctx) is a failed dial,
// as a debugging port that does not answer /json/version is, and failed dials end in the relaunch hook. A
// refused hello (another client holds the pipe) is a failed dial like any other (cdpwire.ErrRefused).
func (m *Mux) dialKeeper(ctx context.Context, socket string) (upConn, *bufio.Reader, map[string]any, error) {
	uc, hello, pipe, err := cdpwire.Dial(ctx, socket)
	if err != nil {
		return nil, nil, nil, err
	}
	pc := newPipeConn(uc, pipe)
	deadline := time.Now().Add(m.cfg.PongTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	pc.setDeadline(deadline)
	br := bufio.NewReaderSize(pc, 64<<10)
	x := &pipeExchange{m: m, w: pc, br: br}
	version, err := x.open(hello.Skip)
	if err != nil {
		pc.Close()
		return nil, nil, nil, fmt.Errorf("keeper %s: %w", socket, err)
	}
	pc.setDeadline(time.Time{})
	return pc, br, version, nil
}

// versionObject turns a Browser.getVersion result into the object Chrome serves at /json/version, without
// its webSocketDebuggerUrl (Door.WriteVersion adds the mux's own): the same keys, WebKit-Version as
// Chrome writes it ("537.36 (@revision)", its version read from the user agent) and, for a browser on
// this host (behind a keeper), Chrome's File-Path-Style.
func versionObject(res []byte, local bool) (map[string]any, error) {
	var v struct {
		ProtocolVersion string `json:"protocolVersion"`
		Product         string `json:"product"`
		Revision        string `json:"revision"`
		UserAgent       string `json:"userAgent"`
		JSVersion       string `json:"jsVersion"`
	}
	if err := json.Unmarshal(res, &v); err != nil {
		return nil, err
	}
	webkit := v.Revision
	if _, after, ok := strings.Cut(v.UserAgent, "AppleWebKit/"); ok {
		if ver, _, _ := strings.Cut(after, " "); ver != "" {
			webkit = ver + " (" + v.Revision + ")"
		}
	}
	out := map[string]any{
		"Browser": v.Product, "Protocol-Version": v.ProtocolVersion, "User-Agent": v.UserAgent,
		"V8-Version": v.JSVersion, "WebKit-Version": webkit,
	}
	if local {
		out["File-Path-Style"] = "posix"
		if runtime.GOOS == "windows" {
			out["File-Path-Style"] = "windows"
		}
	}
	return out, nil
}
