//go:build unix && !linux

package keeper

import (
	"net"
	"os"
	"syscall"
)

// growPipe does nothing here: only Linux resizes a pipe.
func growPipe(*os.File) {}

// hungUp reports whether the keeper closed a client's socket (its relay ended). Without POLLRDHUP it cannot
// see a peer's close unread: a client that closed and at once reconnects may be refused once.
func hungUp(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return true
	}
	return raw.Control(func(uintptr) {}) != nil
}
