package wrapshim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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

// reset clears the count after any call that did not time out. The common case (no file) costs one stat.
func (w *wedgeCounter) reset() error {
	if _, err := os.Stat(w.path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return w.update(func(int) int { return 0 })
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
	old, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || old < 0 {
		old = 0
	}
	return os.WriteFile(w.path, []byte(strconv.Itoa(next(old))+"\n"), 0o600)
}
