// Package atomicfile writes files that other processes read through a synced temp file in the same directory
// and a rename, so a reader sees the old file or the new one, never half of one, and opens folders without
// following a symlink.
package atomicfile

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Write writes data to path with mode.
func Write(path string, data []byte, mode os.FileMode) error {
	return WriteFrom(path, bytes.NewReader(data), mode)
}

// WriteFrom writes what r holds to path with mode.
func WriteFrom(path string, r io.Reader, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = io.Copy(f, r)
	err = errors.Join(err, f.Chmod(mode), f.Sync(), f.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// SyncDir makes the entries changed in dir (a rename into it) durable: a power cut after it leaves them.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
