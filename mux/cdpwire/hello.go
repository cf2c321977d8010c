package cdpwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"time"
)

// The keeper's hello (SPEC §13): a launched browser's pipe is held by a keeper, which hands it to one client
// at a time on its unix socket, with a first message of its own.

// Format is the version of the keeper's protocol; its hello says which it speaks. Format 2 hands Chromium's
// pipe over with the hello (format 1 relayed it).
const Format = 2

// Hello is what a keeper says first on each connection, as {"keeper":Hello}: with it come the pipe's two
// ends (SCM_RIGHTS), unless it is a refusal.
type Hello struct {
	Format     int `json:"format"`
	PID        int `json:"pid"`
	BrowserPID int `json:"browser_pid"`
	// Skip: the keeper stopped reading inside a message of Chromium's; its rest, up to and including the
	// next NUL, is nobody's, and the client discards it before it reads a message.
	Skip    bool   `json:"skip,omitempty"`
	Refused string `json:"refused,omitempty"`
}

// ErrRefused: the keeper serves another client.
var ErrRefused = errors.New("keeper refused the connection")

// helloTimeout bounds the wait for a keeper's hello: a live keeper writes it at once.
const helloTimeout = 5 * time.Second

// maxHello bounds a hello: a few dozen bytes.
const maxHello = 4 << 10

// Dial connects to the keeper's socket, reads its hello and takes the pipe handed over with it. From then on
// the client is the pipe's only reader and writer; the connection carries nothing more, and the keeper takes
// the pipe back when it closes (or asks for it back by closing its side first). So a client closes the pipe
// before the connection: Pipe.Close, then conn.Close. A refusal is ErrRefused with the keeper's reason, and
// no pipe.
func Dial(ctx context.Context, socket string) (*net.UnixConn, Hello, *Pipe, error) {
	addr, release, err := SockAddr(socket)
	if err != nil {
		return nil, Hello{}, nil, err
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", addr)
	release()
	if err != nil {
		return nil, Hello{}, nil, fmt.Errorf("dial %s: %w", socket, err)
	}
	uc := nc.(*net.UnixConn)
	deadline := time.Now().Add(helloTimeout)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	uc.SetReadDeadline(deadline)
	h, pipe, err := readHello(uc)
	if err != nil {
		uc.Close()
		return nil, h, nil, fmt.Errorf("keeper %s: %w", socket, err)
	}
	uc.SetReadDeadline(time.Time{})
	return uc, h, pipe, nil
}

// readHello reads the hello, one NUL-ended message, and the descriptors that came with it. Anything but a
// well-formed hello of this format with the pipe's two ends (or a refusal with none) is an error, and every
// descriptor received is closed.
func readHello(uc *net.UnixConn) (Hello, *Pipe, error) {
	var (
		msg  []byte
		fds  []int
		buf  = make([]byte, maxHello)
		oob  = make([]byte, rightsSpace)
		pipe *Pipe
	)
	defer func() {
		if pipe == nil {
			closeFDs(fds)
		}
	}()
	for {
		n, oobn, flags, _, err := uc.ReadMsgUnix(buf, oob)
		n, oobn = max(n, 0), max(oobn, 0) // a failed read may say -1
		got, perr := parseRights(oob[:oobn], flags)
		fds = append(fds, got...)
		msg = append(msg, buf[:n]...)
		switch {
		case perr != nil:
			return Hello{}, nil, perr
		case bytes.IndexByte(msg, 0) >= 0:
		case err != nil:
			return Hello{}, nil, fmt.Errorf("no hello: %w", err)
		case len(msg) > maxHello:
			return Hello{}, nil, fmt.Errorf("its first message is over %d bytes: not a hello", maxHello)
		default:
			continue
		}
		break
	}
	end := bytes.IndexByte(msg, 0)
	if end != len(msg)-1 {
		return Hello{}, nil, fmt.Errorf("%d bytes after its hello: a keeper sends nothing after it", len(msg)-end-1)
	}
	var m struct {
		Keeper *Hello `json:"keeper"`
	}
	if err := json.Unmarshal(msg[:end], &m); err != nil || m.Keeper == nil {
		return Hello{}, nil, fmt.Errorf("its first message is not a hello: %.100q", msg[:end])
	}
	h := *m.Keeper
	switch {
	case h.Refused != "":
		return h, nil, fmt.Errorf("%w: %s", ErrRefused, h.Refused)
	case h.Format != Format:
		return h, nil, fmt.Errorf("format %d, want %d", h.Format, Format)
	}
	p, err := pipeFromFDs(fds)
	if err != nil {
		return h, nil, err
	}
	pipe = p
	return h, pipe, nil
}
