package wrapshim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// lockWait bounds the wait for another shim of the same session holding the counter's lock.
const lockWait = 10 * time.Second

// wedgeCounter counts consecutive timed-out calls of one session (BU_NAME) in a file, read-modify-written
// under a flock on that file. A missing, empty or corrupt file counts as 0.
type wedgeCounter struct{ path string }

// increment adds one timeout and returns the new count.
func (w *wedgeCounter) increment() (int, error) {
	var n int
	err := w.update(func(old int) int { n = old + 1; return n })
	return n, err
}

// reset clears the count after any call that did not time out. A count that is already 0 (no file, the
// common case, or a file a reset already cleared) is left as it is: one open, no lock and no write.
func (w *wedgeCounter) reset() error {
	switch n, err := w.peek(); {
	case errors.Is(err, os.ErrNotExist), err == nil && n == 0:
		return nil
	}
	return w.update(func(int) int { return 0 })
}

// peek reads the count without the lock, with plain system calls (an os.File would join the runtime's
// poller, set up on the shim's first file). A count that another shim is writing meanwhile reads as 0 or as
// its new value, either of which a reset may follow.
func (w *wedgeCounter) peek() (int, error) {
	fd, err := syscall.Open(w.path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	defer syscall.Close(fd)
	var buf [32]byte // a count is a few digits; a longer file is corrupt, and only its start is read
	n, err := syscall.Read(fd, buf[:])
	if err != nil {
		return 0, err
	}
	return parseCount(buf[:n]), nil
}

// parseCount reads a counter file's content: a missing, empty or corrupt count is 0.
func parseCount(data []byte) int {
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func (w *wedgeCounter) update(next func(old int) int) error {
	if err := os.MkdirAll(filepath.Dir(w.path), 0o700); err != nil {
		return err
	}
	// The lock is on the counter file itself, so the file is rewritten in place, never renamed over.
	lock := flock.New(w.path, flock.SetFlag(os.O_CREATE|os.O_RDWR), flock.SetPermissions(0o600))
	ctx, cancel := context.WithTimeout(context.Background(), lockWait)
	defer cancel()
	ok, err := lock.TryLockContext(ctx, 5*time.Millisecond)
	if err != nil || !ok {
		return fmt.Errorf("lock %s: %v", w.path, errors.Join(err, ctx.Err()))
	}
	defer lock.Close()
	data, err := os.ReadFile(w.path)
	if err != nil {
		return err
	}
	return os.WriteFile(w.path, []byte(strconv.Itoa(next(parseCount(data)))+"\n"), 0o600)
}
