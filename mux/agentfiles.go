package mux

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"vibebrowser/osuser"
)

// Downloads for a store with an agent user (SPEC §14): the mux may run as root, Chrome as the browser user
// and the client as the agent user, so every file and folder the mux makes for a client is given to that
// user, and a path a client chose is written into only as far as that user could write it.

// incomingFolder makes the folder Chrome writes downloads into: the browser user's own (0700) when the
// store's Chromium runs as one, the mux's own otherwise.
func (ds *downloads) incomingFolder() error {
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
func (ds *downloads) ownerFolder(dir string) error {
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

// placeForAgent copies the filed download src into dir, the downloadPath a client of a store with an
// agent user asked for: at dir/<guid> when exact (allowAndName), else at the first free unique name. dir
// is the client's choice, so it must be a folder that agent user owns; it is opened once and written
// inside only (no path leads out of it), names are taken exclusively, and the copy is the agent user's
// (0600) before it appears complete under its name.
func (ds *downloads) placeForAgent(src, dir, name, guid string, exact bool) (string, error) {
	m := ds.m
	a := m.cfg.Agent
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", fmt.Errorf("the client's download folder: %w", err)
	}
	defer root.Close()
	fi, err := root.Stat(".")
	if err != nil {
		return "", err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != a.UID {
		return "", fmt.Errorf("%s is not a folder of the store's agent user %s: a client's own copy of a download "+
			"goes only into a folder its agent user owns (SPEC §14)", dir, a.Name)
	}
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp, err := ds.partialIn(root, in)
	if err != nil {
		return "", err
	}
	defer root.Remove(tmp) // gone once renamed; removes what a failure left
	if exact {
		if err := root.Rename(tmp, guid); err != nil {
			return "", err
		}
		return filepath.Join(dir, guid), nil
	}
	for i := 0; i < maxUnique; i++ {
		dst := UniqueName(name, i)
		f, err := root.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("place %s in %s: %w", dst, dir, err)
		}
		f.Close()
		if err := root.Rename(tmp, dst); err != nil {
			root.Remove(dst)
			return "", fmt.Errorf("place %s in %s: %w", dst, dir, err)
		}
		return filepath.Join(dir, dst), nil
	}
	return "", fmt.Errorf("place %s in %s: every name up to (%d) is taken", name, dir, maxUnique-1)
}

// partialIn copies in to a new partial file in root, owned by the agent user (0600), and returns its name.
func (ds *downloads) partialIn(root *os.Root, in io.Reader) (string, error) {
	m := ds.m
	var r [8]byte
	rand.Read(r[:])
	name := ".download-" + hex.EncodeToString(r[:]) + PartialSuffix
	out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	if err := fillFile(out, m.cfg.Agent, m.stoppable(in)); err != nil {
		root.Remove(name)
		return "", fmt.Errorf("copy into the client's download folder: %w", err)
	}
	return name, nil
}

// fillFile gives out, a file the mux just created 0600, to owner (nil: the mux's own; a umask only takes bits
// away), copies src into it (a stoppable reader: the copy ends when the mux closes), and closes it.
func fillFile(out *os.File, owner *osuser.User, src io.Reader) error {
	var err error
	if owner != nil {
		err = out.Chown(owner.UID, owner.GID)
	}
	if err == nil {
		_, err = io.Copy(out, src)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
