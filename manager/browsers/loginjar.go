package browsers

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The cookie checkpoint's file as snapshots see it (SPEC §18): logins/<slug>/jar, sealed for "jar:<slug>",
// its content opaque here. The checkpoints themselves are written by the checkpoint code; a snapshot carries
// the jar's content, and a restore puts it back.

// maxJarFile bounds the jar file read.
const maxJarFile = 64 << 20

// jarPath is slug's newest cookie checkpoint.
func (c *Config) jarPath(slug string) string { return c.path("logins", slug, "jar") }

func jarPurpose(slug string) string { return "jar:" + slug }

// readJar is the opened content of slug's checkpoint; nil, nil when there is none.
func (f *Fleet) readJar(slug string) ([]byte, error) {
	sealed, err := readRegular(f.cfg.jarPath(slug), maxJarFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	key, err := f.sealKey()
	if err != nil {
		return nil, err
	}
	jar, err := key.Open(sealed, jarPurpose(slug))
	if err != nil {
		return nil, fmt.Errorf("checkpoint %s: %w", f.cfg.jarPath(slug), err)
	}
	return jar, nil
}

// writeJar replaces slug's checkpoint with content, sealed: through a synced temp file beside it and a
// rename, 0600, given to own (nil: the manager's). nil content removes the checkpoint.
func (f *Fleet) writeJar(slug string, content []byte, own *fileOwner) error {
	path := f.cfg.jarPath(slug)
	if content == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	key, err := f.sealKey()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp := filepath.Join(dir, ".jar.tmp-"+rand.Text()[:12])
	file, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	_, err = file.Write(key.Seal(content, jarPurpose(slug)))
	if own != nil {
		err = errors.Join(err, file.Chown(own.uid, own.gid))
	}
	err = errors.Join(err, file.Sync(), file.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write checkpoint %s: %w", path, err)
	}
	syncDir(dir)
	return nil
}

// readRegular reads path, a regular file of at most limit bytes, never through a symlink or from a FIFO.
func readRegular(path string, limit int64) ([]byte, error) {
	file, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", path, limit)
	}
	b := make([]byte, fi.Size())
	_, err = file.ReadAt(b, 0)
	return b, err
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
