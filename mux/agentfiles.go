package mux

import (
	"errors"
	"io/fs"
	"os"
)

// Downloads for a store with an agent user (SPEC §14): the mux may run as root, Chrome as the browser user
// and the client as the agent user, so every file and folder the mux makes for a client is given to that
// user, and a path a client chose is written into only as far as that user could write it.

// incomingFolder makes the folder Chrome writes downloads into: the browser user's own (0700) when the
// store's Chromium runs as one, the mux's own otherwise.
func (ds *downloadTracker) incomingFolder() error {
	m := ds.m
	dir := ds.incomingDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if b := m.cfg.Browser; b != nil {
		return errors.Join(b.Chown(dir), os.Chmod(dir, 0o700))
	}
	return nil
}

// ownerFolder makes a client's downloads folder (0700), the store's agent user's when it has one.
func (ds *downloadTracker) ownerFolder(dir string) error {
	m := ds.m
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if a := m.cfg.Agent; a != nil {
		return errors.Join(a.Chown(dir), os.Chmod(dir, 0o700))
	}
	return nil
}

// singleName reports whether fi has one name only: a copy the mux made, never a hard link to a file of
// someone else's put where the mux expected its own.
func singleName(fi fs.FileInfo) bool {
	id, ok := fileIdentity(fi)
	return ok && id.links == 1
}
