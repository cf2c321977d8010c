package keeper

import (
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// pipeSize is what the keeper asks of each pipe to Chromium: the most an unprivileged process may (Linux's
// default pipe-max-size), so a burst or a screenshot crosses in a few wakeups rather than sixteen 64 KiB ones.
const pipeSize = 1 << 20

// growPipe asks for a larger pipe buffer, best effort: a smaller one only costs wakeups. It goes through
// SyscallConn, not Fd, which would put the pipe in blocking mode and stop Close from interrupting a read.
func growPipe(f *os.File) {
	raw, err := f.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeSize) })
}

// hungUp reports whether a client's unix socket is done with: its peer closed its end (seen without reading
// from it), or the keeper closed its own. A client that closed and at once reconnects is then waited for,
// not refused as if it were still there.
func hungUp(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true // closed by the keeper: its relay ended
	}
	gone := false
	err = raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
			gone = fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
		}
	})
	return gone || err != nil
}
