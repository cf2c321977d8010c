package mux

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"vibebrowser/osuser"
)

// The local-file rule of SPEC §13: a file a client hands the browser (DOM.setFileInputFiles and the other
// methods of the refusal table that take a path) is read by a page of that client's choosing, so it must not
// be one of the manager's: another store's cookie database, state.db and its mux tokens. Files under the
// manager's home are refused, except the calling client's own folders; the agent's own files elsewhere pass.
// A store with an agent user (SPEC §14) adds one condition: that user must be able to read the file itself,
// so a page never reads what its agent could not.

// fileRule is the reason the local-file rule gives.
const fileRule = "a client may hand the browser only regular files outside the manager's home, or inside its " +
	"own folders there (its task's downloads), and that a store's agent user, where it has one, may read itself: a page reads what it is handed"

// maxHomeWalk bounds the walk that looks for the other names of a hard-linked file. A home too large to
// walk refuses the file: the rule fails closed.
const maxHomeWalk = 2_000_000

// localFiles checks paths against one manager home and one agent user. The zero value (no home, no agent
// user) passes everything.
type localFiles struct {
	home  string       // resolved (symlinks followed), "" for none
	agent *osuser.User // the store's agent user, nil for none
}

func newLocalFiles(home string, agent *osuser.User) localFiles {
	lf := localFiles{agent: agent}
	if home != "" {
		lf.home = resolveDir(home)
	}
	return lf
}

// resolveDir is dir with its symlinks followed, or cleaned as given when it does not exist (yet).
func resolveDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return filepath.Clean(dir)
}

// check returns why path may not be handed to the browser by a client whose own folders are own, or nil.
// Symlinks are followed, and a file with more than one name on the home's file system is looked for under
// the home: a hard link outside it (or in the client's own folder) to a cookie database is that database.
func (lf localFiles) check(path string, own []string) error {
	if lf.home == "" && lf.agent == nil {
		return nil
	}
	if !filepath.IsAbs(path) {
		return fmt.Errorf("%q is not an absolute path", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s does not exist", path)
		}
		return fmt.Errorf("%s cannot be resolved: %w", path, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file (a folder or device could hold files this rule cannot check)", path)
	}
	if err := lf.checkHome(path, real, fi, own); err != nil {
		return err
	}
	if lf.agent != nil {
		if err := lf.agent.MayRead(real); err != nil {
			return fmt.Errorf("%s is not readable by the store's agent user %s itself: %w", path, lf.agent.Name, err)
		}
	}
	return nil
}

// checkHome is the rule's home part for path (resolved to real, stat fi): not under the home outside the
// client's own folders, and no other name there.
func (lf localFiles) checkHome(path, real string, fi fs.FileInfo, own []string) error {
	if lf.home == "" {
		return nil
	}
	ownReal := make([]string, len(own))
	for i, d := range own {
		ownReal[i] = resolveDir(d)
	}
	if within(real, lf.home) && !withinAny(real, ownReal) {
		return fmt.Errorf("%s lies under the manager's home (%s)", path, lf.home)
	}
	if id, ok := fileIdentity(fi); ok && id.links > 1 {
		hfi, err := os.Stat(lf.home)
		if hid, ok := fileIdentity(hfi); err == nil && ok && hid.dev == id.dev {
			if other, err := lf.otherName(id, ownReal); err != nil {
				return err
			} else if other != "" {
				return fmt.Errorf("%s is a hard link to %s, under the manager's home", path, other)
			}
		}
	}
	return nil
}

// otherName walks the home for a name of the file id outside the client's own folders.
func (lf localFiles) otherName(id fileID, own []string) (string, error) {
	var found string
	n := 0
	errStop := errors.New("stop")
	err := filepath.WalkDir(lf.home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts hold nothing the walk could name
		}
		if n++; n > maxHomeWalk {
			return fmt.Errorf("the manager's home has more than %d entries to search for the file's other names", maxHomeWalk)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil
		}
		if oid, ok := fileIdentity(fi); ok && oid.dev == id.dev && oid.ino == id.ino && !withinAny(p, own) {
			found = p
			return errStop
		}
		return nil
	})
	if err != nil && err != errStop {
		return "", err
	}
	return found, nil
}

// fileID identifies a file on its file system.
type fileID struct{ dev, ino, links uint64 }

// within reports whether path is dir or lies under it; both are clean and absolute.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+string(filepath.Separator)) || dir == string(filepath.Separator)
}

func withinAny(path string, dirs []string) bool {
	for _, d := range dirs {
		if within(path, d) {
			return true
		}
	}
	return false
}
