package mux

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"vibebrowser/mux/sys/osuser"
)

// The home part of the local-file rule of SPEC §13 (uploads.go opens the file): a file a client hands the
// browser is read by a page of that client's choosing, so it must not be one of the manager's: another
// store's cookie database, state.db and its mux tokens. Files under the manager's home are refused, except the
// calling client's own folders; the agent's own files elsewhere pass.

// maxHomeWalk bounds the walk that looks for the other names of a hard-linked file. A home too large to
// walk refuses the file: the rule fails closed.
const maxHomeWalk = 2_000_000

// localFiles checks files against one manager home. The zero value (no home) passes everything.
type localFiles struct {
	home string // resolved (symlinks followed), "" for none
}

func newLocalFiles(home string) localFiles {
	lf := localFiles{}
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

// open opens path by the rule for a client whose own folders are own, as agent where the store has one, and
// returns the open file. Everything is judged on the file it holds open, and its names are held still while
// they are judged: the path must still name that file after the open (a rename over it meanwhile is
// refused), and no name of it may change until the check is done (a link, unlink or rename sets its ctime).
// The count of its names is not trusted to skip the search for them: lstat finds the name, then reads the
// count, and a rename between (a hard link of a home file taken away again) makes a file with a name in the
// home look like one with a single name outside it. So a file on the home's file system always has the home
// searched for its other names.
func (lf localFiles) open(path string, own []string, agent *osuser.User) (*os.File, error) {
	if !filepath.IsAbs(path) {
		return nil, refuseFile("%q is not an absolute path", path)
	}
	clean := filepath.Clean(path)
	f, err := openNoFollow(clean, agent)
	if err != nil {
		return nil, err
	}
	if err := lf.judgeOpen(f, path, clean, own); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (lf localFiles) judgeOpen(f *os.File, path, clean string, own []string) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return refuseFile("%s is not a regular file (a folder or device could hold files this rule cannot check)", path)
	}
	held, err := fstatState(f)
	if err != nil {
		return err
	}
	named, err := lstatState(clean)
	if err != nil || named.dev != held.dev || named.ino != held.ino {
		return refuseFile("%s changed while the mux opened it: hand a file nothing renames meanwhile", path)
	}
	if err := lf.checkHome(path, clean, fi, own); err != nil {
		return &fileRefusal{why: err.Error()}
	}
	if after, err := fstatState(f); err != nil || after != named || after != held {
		return refuseFile("%s changed while the mux checked it (a name of it was linked, unlinked or renamed): "+
			"hand a file nothing renames meanwhile", path)
	}
	return nil
}

// checkHome is the rule for path (named as real, with no symlink on the way; stat fi of the open file): not
// under the home outside the client's own folders, and no other name there.
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
	if id, ok := fileIdentity(fi); ok {
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
