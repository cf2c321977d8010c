package localapi

import (
	"golang.org/x/sys/unix"
)

// fdPeerUID returns the uid of the process at the other end of a unix socket (SO_PEERCRED).
func fdPeerUID(fd uintptr) (int, error) {
	cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
