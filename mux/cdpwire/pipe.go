package cdpwire

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Chromium's DevTools pipe as a keeper hands it over: its two ends travel with the hello as SCM_RIGHTS.

// Pipe is the client's copy of Chromium's pipe: ToBrowser is the write end of what Chromium reads as its
// fd 3, FromBrowser the read end of what it writes as its fd 4. Both are in non-blocking mode (the keeper's
// os.Pipe made them so), so deadlines work and Close interrupts a blocked read or write.
type Pipe struct {
	ToBrowser   *os.File
	FromBrowser *os.File
}

// Close closes both ends. It returns once neither is in use any more (a read or write in progress is
// interrupted): only then may the keeper take the pipe back.
func (p *Pipe) Close() error {
	return errors.Join(p.ToBrowser.Close(), p.FromBrowser.Close())
}

// SkipRest drops what br reads up to and including the next NUL: the rest of the message a keeper stopped
// reading inside (Hello.Skip), read through br from the pipe's FromBrowser.
func SkipRest(br *bufio.Reader) error {
	for {
		_, err := br.ReadSlice(0)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// rightsSpace is room for the control message of a hello: the pipe's two descriptors, and two more, so that
// a hello with too many is seen whole and refused rather than cut short by the kernel.
var rightsSpace = syscall.CmsgSpace(4 * 4)

// parseRights returns the descriptors a control message carries. A message cut short (MSG_CTRUNC: the
// kernel closed what did not fit) is an error; the descriptors that did arrive are returned with it, for the
// caller to close.
func parseRights(oob []byte, flags int) ([]int, error) {
	var fds []int
	if len(oob) > 0 {
		msgs, err := syscall.ParseSocketControlMessage(oob)
		if err != nil {
			return nil, fmt.Errorf("the hello's control message: %w", err)
		}
		for _, m := range msgs {
			got, err := syscall.ParseUnixRights(&m)
			if err != nil {
				return fds, fmt.Errorf("the hello's control message: %w", err)
			}
			fds = append(fds, got...)
		}
	}
	if flags&syscall.MSG_CTRUNC != 0 {
		return fds, errors.New("the hello came with more descriptors than the pipe's two")
	}
	return fds, nil
}

// pipeFromFDs checks that fds are a pipe's two ends as a keeper hands them over (the write end Chromium
// reads, then the read end it writes) and makes them Files; anything else is an error and closes nothing
// (the caller does).
func pipeFromFDs(fds []int) (*Pipe, error) {
	if len(fds) != 2 {
		return nil, fmt.Errorf("the hello came with %d descriptors, want the pipe's two ends", len(fds))
	}
	if err := checkPipeEnd(fds[0], syscall.O_WRONLY); err != nil {
		return nil, fmt.Errorf("the pipe's end to the browser: %w", err)
	}
	if err := checkPipeEnd(fds[1], syscall.O_RDONLY); err != nil {
		return nil, fmt.Errorf("the pipe's end from the browser: %w", err)
	}
	return &Pipe{
		ToBrowser:   os.NewFile(uintptr(fds[0]), "chromium pipe (to the browser)"),
		FromBrowser: os.NewFile(uintptr(fds[1]), "chromium pipe (from the browser)"),
	}, nil
}

// checkPipeEnd checks that fd is a FIFO open for mode, in non-blocking mode.
func checkPipeEnd(fd, mode int) error {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return fmt.Errorf("descriptor of mode %#o is not a pipe", st.Mode)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	switch {
	case fl&syscall.O_ACCMODE != mode:
		return fmt.Errorf("open with access mode %#o, want %#o", fl&syscall.O_ACCMODE, mode)
	case fl&syscall.O_NONBLOCK == 0:
		return errors.New("in blocking mode: a keeper hands over the non-blocking ends it reads and writes itself")
	}
	return nil
}

// closeFDs closes descriptors received and not made Files.
func closeFDs(fds []int) {
	for _, fd := range fds {
		syscall.Close(fd)
	}
}

// SendPipe writes hello, NUL-ended, on uc with the pipe's two ends (to, then from the browser) as SCM_RIGHTS:
// the keeper's hand-over. The Files stay the caller's, and stay in non-blocking mode (their descriptors are
// read through SyscallConn, never Fd, which would switch the shared open file to blocking).
func SendPipe(uc *net.UnixConn, hello []byte, toBrowser, fromBrowser *os.File, bound time.Duration) error {
	to, err := toBrowser.SyscallConn()
	if err != nil {
		return err
	}
	from, err := fromBrowser.SyscallConn()
	if err != nil {
		return err
	}
	uc.SetWriteDeadline(time.Now().Add(bound))
	defer uc.SetWriteDeadline(time.Time{})
	var werr error
	cerr := to.Control(func(tfd uintptr) {
		if err := from.Control(func(ffd uintptr) {
			msg := append(append([]byte(nil), hello...), 0)
			var n int
			n, _, werr = uc.WriteMsgUnix(msg, syscall.UnixRights(int(tfd), int(ffd)), nil)
			if werr == nil && n != len(msg) {
				werr = fmt.Errorf("hello written short: %d of %d bytes", n, len(msg))
			}
		}); err != nil {
			werr = err
		}
	})
	return errors.Join(cerr, werr)
}
