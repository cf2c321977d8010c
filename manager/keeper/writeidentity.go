package keeper

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"time"

	"vibebrowser/mux/sys/atomicfile"
	"vibebrowser/mux/sys/procid"
)

// writeIdentity writes the identity file, atomically and 0600: the launcher's sign that the keeper is ready,
// and what a later manager checks against the process table before it adopts the browser.
func (k *keeper) writeIdentity() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	self, err := procid.Inspect(ctx, os.Getpid())
	if err != nil {
		return fmt.Errorf("the keeper's start time: %w", err)
	}
	chrome, err := procid.Inspect(ctx, k.br.pid)
	if err != nil {
		return fmt.Errorf("chromium's start time: %w", err)
	}
	pgid, err := syscall.Getpgid(k.br.pid)
	if err != nil {
		return fmt.Errorf("chromium's process group: %w", err)
	}
	id := Identity{
		Format:       Format,
		Key:          k.cfg.Key,
		Socket:       k.socket,
		Profile:      k.cfg.Profile,
		KeeperPID:    os.Getpid(),
		KeeperStart:  self.Start,
		BrowserPID:   k.br.pid,
		BrowserStart: chrome.Start,
		BrowserPGID:  pgid,
	}
	b, err := json.MarshalIndent(id, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(k.idPath, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", k.idPath, err)
	}
	k.written = &id
	return nil
}
