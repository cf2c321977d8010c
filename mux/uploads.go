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

	"vibebrowser/mux/clientid"
	"vibebrowser/mux/downloads"
)

// Files a client hands the browser (SPEC §13, §20): the mux opens each itself, as the store's agent user where
// it has one and without following any symlink on the way (fileopen_*.go), judges the file it holds open, and
// copies it into a folder of the client's that only the browser user reads. Chromium gets the copy's path, so
// nothing can change between the check and what the page reads: no symlink flipped after the check, no file
// swapped under its name.

// UploadsDir is the folder under a store's downloads folder where the copies of the files its clients hand
// the browser live, one folder per client; Chromium reads them, so they are the browser user's.
const UploadsDir = ".uploads"

// fileRule is the reason the local-file rule gives.
const fileRule = "a client may hand the browser only regular files outside the manager's home, or inside its " +
	"own folders there (its task's downloads), named without a symlink on the way, that a store's agent user, " +
	"where it has one, may read itself: the mux opens the file itself and the browser gets its copy"

// fileRefusal is a file the rule refuses, with why.
// uploads is the clients' file copies for the browser: the folder, made on first use, that holds them.
type uploads struct {
	noHooks
	m *Mux
	// Guarded by Mux.mu: dir is the folder of the copies once made; own when it is a temporary folder of
	// the mux's own, removed when it closes.
	dir string
	own bool
}

type fileRefusal struct{ why string }

func (r *fileRefusal) Error() string { return r.why }

func refuseFile(format string, args ...any) error {
	return &fileRefusal{why: fmt.Sprintf(format, args...)}
}

// uploadCopy opens path for client id by the rule and returns the path of the browser's copy of it.
func (u *uploads) uploadCopy(id, path string) (string, error) {
	m := u.m
	f, err := m.files.open(path, u.ownDirs(id), m.cfg.Agent)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return u.copyForBrowser(id, filepath.Base(f.Name()), f)
}

// copyForBrowser copies src into a new folder of client id's under UploadsDir, as name, readable by the
// browser user only, and returns its path.
func (u *uploads) copyForBrowser(id, name string, src io.Reader) (string, error) {
	m := u.m
	root, err := u.uploadRoot()
	if err != nil {
		return "", err
	}
	var r [12]byte
	rand.Read(r[:])
	dir := filepath.Join(root, id, hex.EncodeToString(r[:]))
	if err := u.browserFolder(filepath.Dir(dir)); err != nil {
		return "", err
	}
	if err := u.browserFolder(dir); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, name)
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	if err := downloads.FillFile(out, m.cfg.Browser, m.stoppable(src)); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("copy for the browser: %w", err)
	}
	return dst, nil
}

// uploadRoot is the store's uploads folder, made on first use: under the downloads folder when there is one,
// else a folder of the mux's own for its lifetime.
func (u *uploads) uploadRoot() (string, error) {
	m := u.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if u.dir != "" {
		return u.dir, nil
	}
	dir := ""
	if m.cfg.DownloadDir != "" {
		dir = filepath.Join(m.cfg.DownloadDir, UploadsDir)
		if err := u.browserFolder(dir); err != nil {
			return "", err
		}
	} else {
		d, err := os.MkdirTemp("", "vibe-uploads-")
		if err != nil {
			return "", err
		}
		if err := u.browserFolder(d); err != nil {
			return "", err
		}
		dir, u.own = d, true
	}
	u.dir = dir
	return dir, nil
}

// browserFolder makes dir (0700), the browser user's where the store's Chromium runs as one.
func (u *uploads) browserFolder(dir string) error {
	m := u.m
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a folder", dir)
	}
	if b := m.cfg.Browser; b != nil {
		return errors.Join(b.Chown(dir), os.Chmod(dir, 0o700))
	}
	return nil
}

// clientGoneLocked removes client cl's copies once its tabs are gone (a feature hook).
func (u *uploads) clientGoneLocked(cl *client) {
	if u.dir != "" {
		os.RemoveAll(filepath.Join(u.dir, cl.id))
	}
}

// ownDirs are the folders under the home that client id's files may come from: its downloads folder (its
// task's, for a --worker slot) and the store's agent area.
func (u *uploads) ownDirs(id string) []string {
	m := u.m
	var own []string
	if m.cfg.DownloadDir != "" {
		own = append(own, filepath.Join(m.cfg.DownloadDir, clientid.OwnerDir(id)))
	}
	if m.cfg.AgentDir != "" {
		own = append(own, m.cfg.AgentDir)
	}
	return own
}

// closeLocked (a feature hook) removes the uploads folder when it is a temporary folder of the mux's own; a
// store's uploads stay with its clients' tabs.
func (u *uploads) closeLocked() {
	if u.own {
		os.RemoveAll(u.dir)
	}
}
