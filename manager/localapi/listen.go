package localapi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/rs/zerolog"
)

// ListenOwner prepares the owner's socket at path: a stale socket (one no process answers on) is removed, a
// live one refuses the start; the socket is bound 0600, and every accepted connection's peer must have our uid.
func ListenOwner(path string, log zerolog.Logger) (net.Listener, error) {
	if _, err := os.Lstat(path); err == nil {
		conn, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			conn.Close()
			return nil, fmt.Errorf("another manager answers on %s", path)
		}
		log.Info().Str("socket", path).Msg("removing a stale socket")
	}
	ul, err := bindSocket(path, 0o600)
	if err != nil {
		return nil, err
	}
	return &peerListener{UnixListener: ul, uid: os.Getuid(), log: log}, nil
}

// bindSocket binds a unix socket at path with mode perm, removing what is there first (the caller knows no
// process answers on it): the socket is bound, chmodded and only then listened on, so no other user can
// connect in between.
func bindSocket(path string, perm os.FileMode) (*net.UnixListener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close() // net.FileListener dups the descriptor
	syscall.CloseOnExec(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		return nil, fmt.Errorf("bind %s: %w", path, err)
	}
	if err := os.Chmod(path, perm); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := syscall.Listen(fd, 128); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	ul := ln.(*net.UnixListener)
	ul.SetUnlinkOnClose(true)
	return ul, nil
}

// peerListener drops connections from processes of another uid (SO_PEERCRED / LOCAL_PEERCRED).
type peerListener struct {
	*net.UnixListener
	uid int
	log zerolog.Logger
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.UnixListener.AcceptUnix()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(conn)
		if err == nil && uid == l.uid {
			return conn, nil
		}
		l.log.Warn().Int("peer_uid", uid).Err(err).Msg("refused an API connection from another user")
		conn.Close()
	}
}

// Closed reports whether err is the listener being closed on shutdown.
func Closed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, context.Canceled)
}

// peerUID returns the uid of the process at the other end of conn.
func peerUID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, credErr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, credErr = fdPeerUID(fd) }); err != nil {
		return -1, err
	}
	return uid, credErr
}
