// Package wrapper installs a wrapper directory: a copy of the shim named browser-use and the config baked beside it.
package wrapper

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"vibebrowser/manager/api"
	"vibebrowser/mux/sys/atomicfile"
)

// BinaryName is the name agents call; every installed shim copy has it.
const BinaryName = "browser-use"

// Install copies the shim executable at shimPath into dir as BinaryName and writes cfg beside it as
// api.ShimConfigName (0644: it holds no secret, and a store's agent user reads it, SPEC §14). Each file is written to a temp file in dir and renamed, so a shim starting at
// any moment sees either the old pair or the new one; the binary goes first because a shim accepts an older
// config but refuses a newer one.
func Install(dir, shimPath string, cfg *api.ShimConfig) error {
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("install shim in %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("install shim: %w", err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("install shim: %w", err)
	}
	src, err := os.Open(shimPath)
	if err != nil {
		return fmt.Errorf("install shim: %w", err)
	}
	defer src.Close()
	if err := atomicfile.WriteFrom(filepath.Join(dir, BinaryName), src, 0o755); err != nil {
		return fmt.Errorf("install shim: %w", err)
	}
	data, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return fmt.Errorf("install shim config: %w", err)
	}
	if err := atomicfile.Write(filepath.Join(dir, api.ShimConfigName), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("install shim config: %w", err)
	}
	return nil
}
