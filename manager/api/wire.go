package api

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// roundTrip sends one HTTP/1.1 request (Connection: close), req a requestBuffer holding its body (nil: none),
// and reads the status and the body of the answer, whether it is framed by Content-Length, chunked, or ended
// by the close.
func (c *unixConn) roundTrip(method, path, token string, req []byte) (int, []byte, error) {
	// A server may answer (and close) before reading the whole request; its answer is still read.
	writeErr := c.writeRequest(method, path, token, req)
	// 1 KiB holds a manager's headers and a shim's answers whole; a longer line or body is read past it.
	return readAnswer(bufio.NewReaderSize(c, 1<<10), writeErr)
}

// headRoom is what a request's buffer keeps free before its body, for the head: writeRequest puts the head
// there and sends the request in one write, with no copy of the body. One write, not the head and then the
// body, so that the manager reads the request at once rather than waiting for the body's part of it.
const headRoom = 320

// requestBuffer is a buffer for a request whose JSON body of about size bytes is appended to it.
func requestBuffer(size int) []byte { return make([]byte, headRoom, headRoom+size) }

// writeRequest sends one HTTP/1.1 request (Connection: close), req a requestBuffer holding its body after
// headRoom (nil: no body).
func (c *unixConn) writeRequest(method, path, token string, req []byte) error {
	var room [headRoom]byte
	head := append(room[:0], method...)
	head = append(head, ' ')
	head = append(head, path...)
	head = append(head, " HTTP/1.1\r\nHost: manager\r\nUser-Agent: vibe-browser\r\nConnection: close\r\n"...)
	if token != "" {
		head = append(head, "Authorization: Bearer "...)
		head = append(head, token...)
		head = append(head, "\r\n"...)
	}
	if req != nil {
		head = append(head, "Content-Type: application/json\r\nContent-Length: "...)
		head = strconv.AppendInt(head, int64(len(req)-headRoom), 10)
		head = append(head, "\r\n"...)
	}
	head = append(head, "\r\n"...)
	switch {
	case req == nil:
		req = head
	case len(head) <= headRoom:
		req = req[headRoom-len(head):]
		copy(req, head)
	default: // a long path: the head and the body copied together
		req = append(head, req[headRoom:]...)
	}
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
	proto, rest, _ := bytes.Cut(statusLine, []byte(" "))
	code, _, _ := bytes.Cut(rest, []byte(" "))
	status, err := strconv.Atoi(string(code))
	if !bytes.HasPrefix(proto, []byte("HTTP/1.")) || err != nil {
		return 0, nil, fmt.Errorf("malformed status line %q", statusLine)
	}
	length, chunked := -1, false
	for {
		line, err := readLine(r)
		if err != nil {
			return 0, nil, fmt.Errorf("read answer headers: %w", err)
		}
		if len(line) == 0 {
			break
		}
		name, value, _ := bytes.Cut(line, []byte(":"))
		name, value = bytes.TrimSpace(name), bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, nil, fmt.Errorf("malformed Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
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

// readLine reads a line without its CRLF. The line is the reader's, valid until its next read: it is read
// in place, not copied (the shim reads a few on every call).
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull { // longer than the buffer: the rest is read into a copy
		var rest []byte
		rest, err = r.ReadBytes('\n')
		line = append(append([]byte(nil), line...), rest...)
	}
	if err != nil {
		return nil, err
	}
	return bytes.TrimRight(line, "\r\n"), nil
}

// readChunked decodes a chunked body (RFC 9112 §7.1), ignoring extensions and trailers.
func readChunked(r *bufio.Reader) ([]byte, error) {
	var body []byte
	for {
		line, err := readLine(r)
		if err != nil {
			return nil, err
		}
		sizeText, _, _ := bytes.Cut(line, []byte(";"))
		size, err := strconv.ParseInt(string(bytes.TrimSpace(sizeText)), 16, 64)
		if err != nil || size < 0 || int64(len(body))+size > maxAnswer {
			return nil, fmt.Errorf("malformed chunk size %q", line)
		}
		if size == 0 {
			for { // trailers, up to the blank line
				if line, err := readLine(r); err != nil || len(line) == 0 {
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
