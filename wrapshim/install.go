package wrapshim

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// BinaryName is the name agents call; every installed shim copy has it.
const BinaryName = "browser-use"

// Install copies the shim executable at shimPath into dir as BinaryName and writes cfg beside it as
// ConfigName (0600). Each file is written to a temp file in dir and renamed, so a shim starting at any moment
// sees either the old pair or the new one; the binary goes first because a shim accepts an older config but
// refuses a newer one.
func Install(dir, shimPath string, cfg *Config) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("install shim in %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("install shim: %w", err)
	}
	src, err := os.Open(shimPath)
	if err != nil {
		return fmt.Errorf("install shim: %w", err)
	}
	defer src.Close()
	if err := writeAtomic(filepath.Join(dir, BinaryName), 0o755, func(w io.Writer) error {
		_, err := io.Copy(w, src)
		return err
	}); err != nil {
		return fmt.Errorf("install shim: %w", err)
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("install shim config: %w", err)
	}
	if err := writeAtomic(filepath.Join(dir, ConfigName), 0o600, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	}); err != nil {
		return fmt.Errorf("install shim config: %w", err)
	}
	return nil
}

// writeAtomic writes path through a temp file in the same directory, synced, chmodded and renamed.
func writeAtomic(path string, mode os.FileMode, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	if err := fill(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
