package keeper

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"vibebrowser/mux/cdpwire"
)

// The keeper's socket: one client at a time, each handed the pipe with the hello; a second connection while
// one holds it is refused with a message.

// refusedBusy is the refusal of a connection while another client is served.
const refusedBusy = "another client holds the browser's pipe: a keeper lends it to one at a time"

// greetBound bounds the write of a hello or a refusal: a fresh socket's buffer takes it at once.
const greetBound = 5 * time.Second

// listen makes the keeper's socket: a stale one (no keeper answers on it) is removed first; the socket is
// bound, chmodded 0600 and only then listened on, so no other user can connect in between.
func (k *keeper) listen() error {
	path := k.socket
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("%s exists and is not a socket: the keeper removes only a stale socket", path)
		}
		if addr, release, err := cdpwire.SockAddr(path); err == nil {
			nc, err := net.DialTimeout("unix", addr, time.Second)
			release()
			if err == nil {
				nc.Close()
				return fmt.Errorf("another keeper answers on %s", path)
			}
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("remove stale socket: %w", err)
		}
		k.log.Info().Str("socket", path).Msg("removed a stale socket")
	}
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	syscall.CloseOnExec(fd) // no child of the keeper's inherits it
	f := os.NewFile(uintptr(fd), path)
	defer f.Close() // net.FileListener dups the descriptor
	addr, release, err := cdpwire.SockAddr(path)
	if err != nil {
		return err
	}
	err = syscall.Bind(fd, &syscall.SockaddrUnix{Name: addr})
	release()
	if err != nil {
		return fmt.Errorf("bind %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		os.Remove(path)
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := syscall.Listen(fd, 16); err != nil {
		os.Remove(path)
		return fmt.Errorf("listen %s: %w", path, err)
	}
	ln, err := net.FileListener(f)
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("listen %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		ln.Close()
		os.Remove(path)
		return fmt.Errorf("stat %s: %w", path, err)
	}
	k.ln = ln.(*net.UnixListener)
	// The keeper removes the file itself, and only if it is still the one it made: a keeper that follows it
	// for the same key may have made its own.
	k.ln.SetUnlinkOnClose(false)
	k.lnFile = fi
	return nil
}

// removeFiles removes the socket and the identity file, each only if it is still this keeper's.
func (k *keeper) removeFiles() {
	if k.lnFile != nil {
		if fi, err := os.Lstat(k.socket); err == nil && os.SameFile(fi, k.lnFile) {
			os.Remove(k.socket)
		}
	}
	if k.written != nil {
		if id, err := ReadIdentity(k.idPath); err == nil && id == *k.written {
			os.Remove(k.idPath)
		}
	}
	if k.cfg.ForwardPort > 0 {
		os.Remove(ForwardStatusPath(k.cfg.RunDir, k.cfg.Key))
	}
}

// acceptLoop lends the pipe to one client at a time until the listener closes. A connection that comes while
// a client holds it is refused; one that comes while a client is going (it hung up, or the keeper is taking
// the pipe back) waits for it.
func (k *keeper) acceptLoop() {
	var prev chan struct{} // the last client's done
	for {
		nc, err := k.ln.AcceptUnix()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			k.log.Warn().Err(err).Msg("accept")
			select {
			case <-time.After(100 * time.Millisecond): // EMFILE and the like: let them pass, do not spin
			case <-k.quit:
				return
			}
			continue
		}
		if prev != nil {
			select {
			case <-prev:
			default:
				if c := k.current(); c != nil && !hungUp(c.nc) {
					k.refuse(nc)
					continue
				}
				select {
				case <-prev:
				case <-k.quit:
					nc.Close()
					return
				}
			}
		}
		k.mu.Lock()
		stopping := k.stopping
		k.mu.Unlock()
		if stopping {
			nc.Close()
			return
		}
		c, err := k.lend(nc)
		if err != nil {
			k.log.Warn().Err(err).Msg("pipe not handed over: connection dropped")
			continue
		}
		k.log.Info().Int("conn", c.num).Msg("client connected: the pipe is lent to it")
		prev = c.done
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			k.serveClient(c)
		}()
	}
}

// current is the client the pipe is lent to, nil while the keeper holds it.
func (k *keeper) current() *client {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.client
}

// refuse tells a second connection why it is not served, and closes it.
func (k *keeper) refuse(nc net.Conn) {
	k.log.Info().Msg("client refused: " + refusedBusy)
	msg, _ := json.Marshal(map[string]map[string]string{"keeper": {"refused": refusedBusy}})
	nc.SetWriteDeadline(time.Now().Add(greetBound))
	nc.Write(append(msg, 0)) // a peer that left already needs no reason
	nc.Close()
}
