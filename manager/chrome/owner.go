package chrome

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"vibebrowser/mux/sys/atomicfile"
)

// Giving folders to the browser user. The manager is root and the folders are, or become, another user's:
// each is opened without following a symlink and changed through that descriptor, and a profile's files are
// changed from inside it (os.Root), so nothing its user plants there leads the manager anywhere else.

// ownDir makes dir (creating it and its parents) o's, 0700.
func ownDir(dir string, o owner) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := atomicfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return errors.Join(f.Chown(o.uid, o.gid), f.Chmod(0o700))
}

// dirOwner is the uid that owns dir (a folder, not a symlink).
func dirOwner(dir string) (int, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return 0, fmt.Errorf("%s is not a folder", dir)
	}
	return int(st.Uid), nil
}

// ownProfile makes the profile o's, 0700. When its top folder is someone else's (a store that just got a
// browser user, or whose browser user changed) every file in it is given over, its former owner shut out
// first so nothing of its changes the tree meanwhile; symlinks are changed themselves, never followed. A
// file hard-linked from outside is refused, not given away: it is another file too.
func ownProfile(profile string, o owner) error {
	f, err := atomicfile.OpenDir(profile)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != o.uid {
		if err := errors.Join(f.Chown(os.Geteuid(), os.Getegid()), f.Chmod(0o700)); err != nil {
			return fmt.Errorf("take over %s: %w", profile, err)
		}
		if err := chownTree(profile, o); err != nil {
			return err
		}
	}
	return errors.Join(f.Chown(o.uid, o.gid), f.Chmod(0o700))
}

// chownTree gives everything under dir (not dir itself) to o, from inside dir.
func chownTree(dir string, o owner) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || name == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := info.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s/%s: no owner to change", dir, name)
		}
		if int(st.Uid) == o.uid && int(st.Gid) == o.gid {
			return nil
		}
		if !d.IsDir() && uint64(st.Nlink) > 1 {
			return fmt.Errorf("%s/%s has %d hard links: the profile is given to its browser user, and a file linked elsewhere is not given away; remove it", dir, name, st.Nlink)
		}
		return root.Lchown(name, o.uid, o.gid)
	})
}
