package cdpwire

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// The keeper's hello (SPEC §13): a launched browser's pipe is held by a keeper, which speaks these messages on
// its unix socket to one client at a time, after a first message of its own.

// Format is the version of the keeper's protocol; its hello says which it speaks.
const Format = 1

// Hello is what a keeper says first on each connection, as {"keeper":Hello}.
type Hello struct {
	Format     int    `json:"format"`
	PID        int    `json:"pid"`
	BrowserPID int    `json:"browser_pid"`
	Refused    string `json:"refused,omitempty"`
}

// ErrRefused: the keeper serves another client.
var ErrRefused = errors.New("keeper refused the connection")

// helloTimeout bounds the wait for a keeper's hello: a live keeper writes it at once.
const helloTimeout = 5 * time.Second

// Dial connects to the keeper's socket and reads its hello. The connection is the caller's, positioned after
// the hello; br holds what was read past it. A refusal is ErrRefused with the keeper's reason.
func Dial(ctx context.Context, socket string) (net.Conn, *bufio.Reader, Hello, error) {
	addr, release, err := SockAddr(socket)
	if err != nil {
		return nil, nil, Hello{}, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", addr)
	release()
	if err != nil {
		return nil, nil, Hello{}, fmt.Errorf("dial %s: %w", socket, err)
	}
	deadline := time.Now().Add(helloTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	nc.SetReadDeadline(deadline)
	br := bufio.NewReaderSize(nc, 64<<10)
	b, _, err := ReadMessage(br, 64<<10)
	if err != nil {
		nc.Close()
		return nil, nil, Hello{}, fmt.Errorf("keeper %s: no hello: %w", socket, err)
	}
	nc.SetReadDeadline(time.Time{})
	var msg struct {
		Keeper *Hello `json:"keeper"`
	}
	if err := json.Unmarshal(b, &msg); err != nil || msg.Keeper == nil {
		nc.Close()
		return nil, nil, Hello{}, fmt.Errorf("keeper %s: its first message is not a hello: %.100q", socket, b)
	}
	h := *msg.Keeper
	if h.Refused != "" {
		nc.Close()
		return nil, nil, h, fmt.Errorf("%w: %s", ErrRefused, h.Refused)
	}
	if h.Format != Format {
		nc.Close()
		return nil, nil, h, fmt.Errorf("keeper %s: format %d, want %d", socket, h.Format, Format)
	}
	return nc, br, h, nil
}
