package downloads

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

	"vibebrowser/mux/sys/osuser"
)

// Filer places downloaded files: in the owners' folders, and where a client asked for its own copy.
type Filer struct {
	// Agent is the store's agent user, nil for none: a client's own copy then goes only into a folder that
	// user owns, and is that user's (SPEC §14).
	Agent *osuser.User
	// Guard wraps every copy's reader, so that a long copy ends when the mux closes; nil for none.
	Guard func(io.Reader) io.Reader
}

// guard is r wrapped by Guard.
func (fl Filer) guard(r io.Reader) io.Reader {
	if fl.Guard == nil {
		return r
	}
	return fl.Guard(r)
}

// PlaceUnique puts src's content at dir/name, or at the first free "name (N).ext", never over an existing
// file, and returns the path. A hard link makes it appear complete at once; across file systems (or where
// links are refused) the content is copied under a partial name first.
func (fl Filer) PlaceUnique(src, dir, name string) (string, error) {
	from, tmp := src, ""
	defer func() {
		if tmp != "" {
			os.Remove(tmp)
		}
	}()
	for i := 0; i < maxUnique; {
		dst := filepath.Join(dir, UniqueName(name, i))
		err := os.Link(from, dst)
		switch {
		case err == nil:
			return dst, nil
		case errors.Is(err, fs.ErrExist):
			i++
			continue
		case tmp == "":
			if tmp, err = fl.copyPartial(src, dir); err != nil {
				return "", err
			}
			from = tmp
			continue
		}
		// No links in dir at all: reserve the name exclusively, then rename the complete copy over it.
		f, rerr := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(rerr, fs.ErrExist) {
			i++
			continue
		}
		if rerr != nil {
			return "", fmt.Errorf("place %s: %w", dst, rerr)
		}
		f.Close()
		if err := os.Rename(tmp, dst); err != nil {
			os.Remove(dst)
			return "", fmt.Errorf("place %s: %w", dst, err)
		}
		tmp = ""
		return dst, nil
	}
	return "", fmt.Errorf("place %s in %s: every name up to (%d) is taken", name, dir, maxUnique-1)
}

// PlaceOwn makes a client's own copy of the filed download src where own asks, by the rules of a local
// client's (SPEC §12, §14): with an agent user only into a folder that user owns (PlaceForAgent), else at
// own.Dir/<guid> (PlaceExact) or under a unique name in own.Dir (PlaceUnique). It returns the copy's path.
func (fl Filer) PlaceOwn(src string, own OwnCopy, name, guid string) (string, error) {
	switch {
	case fl.Agent != nil:
		return fl.PlaceForAgent(src, own.Dir, name, guid, own.Exact)
	case own.Exact:
		dst := filepath.Join(own.Dir, guid)
		return dst, fl.PlaceExact(src, dst)
	}
	return fl.PlaceUnique(src, own.Dir, name)
}

// PlaceExact puts src's content at dst (a client's <downloadPath>/<guid>): a hard link, or a copy renamed
// into place, so dst is complete whenever it exists. A file already at dst is never replaced: the name is
// the client's, but what is there may be anyone's.
func (fl Filer) PlaceExact(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		return err
	}
	err := os.Link(src, dst)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrExist):
		return fmt.Errorf("%s exists: a client's own copy goes only where no file is", dst)
	}
	tmp, err := fl.copyPartial(src, filepath.Dir(dst))
	if err != nil {
		return err
	}
	// Reserve dst exclusively, then rename the complete copy over the reservation (a rename alone replaces).
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("place %s: %w", dst, err)
	}
	f.Close()
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		os.Remove(dst)
		return err
	}
	return nil
}

// copyPartial copies src into a new partial file in dir and returns its path.
func (fl Filer) copyPartial(src, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	in, err := os.OpenFile(src, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out, err := os.CreateTemp(dir, ".download-*"+PartialSuffix)
	if err != nil {
		return "", err
	}
	_, err = io.Copy(out, fl.guard(in))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(out.Name())
		return "", fmt.Errorf("copy %s: %w", src, err)
	}
	return out.Name(), nil
}

// PlaceForAgent copies the filed download src into dir, the downloadPath a client of a store with an
// agent user asked for: at dir/<guid> when exact (allowAndName), else at the first free unique name. dir
// is the client's choice, so it must be a folder that agent user owns; it is opened once and written
// inside only (no path leads out of it), names are taken exclusively, and the copy is the agent user's
// (0600) before it appears complete under its name.
func (fl Filer) PlaceForAgent(src, dir, name, guid string, exact bool) (string, error) {
	a := fl.Agent
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
	tmp, err := fl.partialIn(root, in)
	if err != nil {
		return "", err
	}
	defer root.Remove(tmp) // gone once renamed; removes what a failure left
	for i := 0; i < maxUnique; i++ {
		dst := UniqueName(name, i)
		if exact {
			dst = guid
		}
		// The name is reserved exclusively before the copy is renamed over it: a rename alone replaces a file.
		f, err := root.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		switch {
		case errors.Is(err, fs.ErrExist) && exact:
			return "", fmt.Errorf("%s exists: a client's own copy goes only where no file is", filepath.Join(dir, dst))
		case errors.Is(err, fs.ErrExist):
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
func (fl Filer) partialIn(root *os.Root, in io.Reader) (string, error) {
	var r [8]byte
	rand.Read(r[:])
	name := ".download-" + hex.EncodeToString(r[:]) + PartialSuffix
	out, err := root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	if err := FillFile(out, fl.Agent, fl.guard(in)); err != nil {
		root.Remove(name)
		return "", fmt.Errorf("copy into the client's download folder: %w", err)
	}
	return name, nil
}

// FillFile gives out, a file the mux just created 0600, to owner (nil: the mux's own; a umask only takes bits
// away), copies src into it (a stoppable reader: the copy ends when the mux closes), and closes it.
func FillFile(out *os.File, owner *osuser.User, src io.Reader) error {
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
