package chrome

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

// The manager's reads and writes inside a profile. A profile is its browser user's (SPEC §14) and the
// manager may be root: each goes through the profile's os.Root, so a symlink planted there never leads out
// of it, a FIFO is never waited on, and a read is bounded.

// errTooLarge: a profile file is larger than the manager reads.
var errTooLarge = errors.New("larger than the manager reads")

// readIn reads name inside root, a regular file of at most limit bytes.
func readIn(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", name, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err == nil && int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w (%d bytes)", name, errTooLarge, limit)
	}
	return b, err
}

// writeIn writes name inside root through a synced temp file beside it and a rename, mode 0600, given to
// own (when not nil).
func writeIn(root *os.Root, name string, data []byte, own *owner) error {
	tmp := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".tmp-"+rand.Text()[:12])
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if own != nil {
		err = errors.Join(err, f.Chown(own.uid, own.gid))
	}
	err = errors.Join(err, f.Sync(), f.Close())
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}
