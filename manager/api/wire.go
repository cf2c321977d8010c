package api

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxAnswer bounds an answer's body.
const maxAnswer = 16 << 20

// unixConn is a blocking unix stream socket used without the net package (see Client).
type unixConn struct {
	fd       int
	deadline time.Time   // zero: none
	stop     func() bool // ends the context watch
}

// dialUnix connects to path by deadline (zero: none). The deadline bounds each system call through the
// socket's send and receive timeouts, set to the time left before each, and the context's cancellation shuts
// the socket down, so a blocked call returns.
func dialUnix(ctx context.Context, path string, deadline time.Time) (*unixConn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, err
	}
	syscall.CloseOnExec(fd) // the shim's child must not inherit it
	c := &unixConn{fd: fd, deadline: deadline, stop: func() bool { return true }}
	for {
		if err = c.bound(syscall.SO_SNDTIMEO); err == nil { // a connect waits for room in the listener's backlog
			err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		}
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		if err == syscall.EAGAIN {
			err = errors.New("timed out connecting to the manager")
		}
		return nil, err
	}
	if ctx.Done() != nil {
		c.stop = context.AfterFunc(ctx, func() { _ = syscall.Shutdown(fd, syscall.SHUT_RDWR) })
	}
	return c, nil
}

// bound sets the socket's timeout opt (SO_RCVTIMEO or SO_SNDTIMEO) to the time left before the deadline, and
// fails when none is left.
func (c *unixConn) bound(opt int) error {
	if c.deadline.IsZero() {
		return nil
	}
	left := time.Until(c.deadline)
	if left <= 0 {
		return syscall.EAGAIN
	}
	tv := syscall.NsecToTimeval(max(left, time.Microsecond).Nanoseconds())
	return syscall.SetsockoptTimeval(c.fd, syscall.SOL_SOCKET, opt, &tv)
}

func (c *unixConn) Read(p []byte) (int, error) {
	for {
		err := c.bound(syscall.SO_RCVTIMEO)
		n := 0
		if err == nil {
			n, err = syscall.Read(c.fd, p)
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return 0, errors.New("timed out waiting for the manager")
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

func (c *unixConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		err := c.bound(syscall.SO_SNDTIMEO)
		n := 0
		if err == nil {
			n, err = syscall.Write(c.fd, p[written:])
		}
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN:
			return written, errors.New("timed out sending to the manager")
		case err != nil:
			return written, err
		}
		written += n
	}
	return written, nil
}

func (c *unixConn) Close() error {
	c.stop()
	return syscall.Close(c.fd)
}

// roundTrip sends one HTTP/1.1 request (Connection: close) and reads the status and the body of the answer,
// whether it is framed by Content-Length, chunked, or ended by the close.
func (c *unixConn) roundTrip(method, path, token string, body []byte) (int, []byte, error) {
	// A server may answer (and close) before reading the whole request; its answer is still read.
	writeErr := c.writeRequest(method, path, token, body)
	return readAnswer(bufio.NewReader(c), writeErr)
}

// writeRequest sends one HTTP/1.1 request (Connection: close) with body as its JSON (nil: none).
func (c *unixConn) writeRequest(method, path, token string, body []byte) error {
	req := make([]byte, 0, 256+len(body))
	req = append(req, method+" "+path+" HTTP/1.1\r\nHost: manager\r\nUser-Agent: vibe-browser\r\nConnection: close\r\n"...)
	if token != "" {
		req = append(req, "Authorization: Bearer "+token+"\r\n"...)
	}
	if body != nil {
		req = append(req, "Content-Type: application/json\r\nContent-Length: "...)
		req = strconv.AppendInt(req, int64(len(body)), 10)
		req = append(req, "\r\n"...)
	}
	req = append(req, "\r\n"...)
	req = append(req, body...)
	_, err := c.Write(req)
	return err
}

// readAnswer reads the status and the body of the answer, whether it is framed by Content-Length, chunked,
// or ended by the close; writeErr is the request's, told with a failed read.
func readAnswer(r *bufio.Reader, writeErr error) (int, []byte, error) {
	statusLine, err := readLine(r)
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", errors.Join(writeErr, err))
	}
	proto, rest, _ := strings.Cut(statusLine, " ")
	code, _, _ := strings.Cut(rest, " ")
	status, err := strconv.Atoi(code)
	if !strings.HasPrefix(proto, "HTTP/1.") || err != nil {
		return 0, nil, fmt.Errorf("malformed status line %q", statusLine)
	}
	length, chunked := -1, false
	for {
		line, err := readLine(r)
		if err != nil {
			return 0, nil, fmt.Errorf("read answer headers: %w", err)
		}
		if line == "" {
			break
		}
		name, value, _ := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "content-length":
			if length, err = strconv.Atoi(value); err != nil || length < 0 {
				return 0, nil, fmt.Errorf("malformed Content-Length %q", value)
			}
		case "transfer-encoding":
			chunked = strings.EqualFold(value, "chunked")
		}
	}
	var data []byte
	switch {
	case chunked:
		data, err = readChunked(r)
	case length > maxAnswer:
		err = fmt.Errorf("answer of %d bytes is over the %d limit", length, maxAnswer)
	case length >= 0:
		data = make([]byte, length)
		_, err = io.ReadFull(r, data)
	default:
		data, err = io.ReadAll(io.LimitReader(r, maxAnswer))
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read answer body: %w", err)
	}
	return status, data, nil
}

func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// readChunked decodes a chunked body (RFC 9112 §7.1), ignoring extensions and trailers.
func readChunked(r *bufio.Reader) ([]byte, error) {
	var body []byte
	for {
		line, err := readLine(r)
		if err != nil {
			return nil, err
		}
		sizeText, _, _ := strings.Cut(line, ";")
		size, err := strconv.ParseInt(strings.TrimSpace(sizeText), 16, 64)
		if err != nil || size < 0 || int64(len(body))+size > maxAnswer {
			return nil, fmt.Errorf("malformed chunk size %q", line)
		}
		if size == 0 {
			for { // trailers, up to the blank line
				if line, err := readLine(r); err != nil || line == "" {
					return body, err
				}
			}
		}
		chunk := make([]byte, size)
		if _, err := io.ReadFull(r, chunk); err != nil {
			return nil, err
		}
		body = append(body, chunk...)
		if _, err := readLine(r); err != nil { // the CRLF after the chunk
			return nil, err
		}
	}
}
