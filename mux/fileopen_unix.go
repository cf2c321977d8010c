//go:build unix

package mux

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"vibebrowser/mux/sys/osuser"
)

// openWalk opens path one component at a time from /, each with O_NOFOLLOW, so no symlink on the way is
// followed: the fallback where openat2 is missing.
func openWalk(path string) (*os.File, error) {
	dir, err := unix.Open("/", walkDirFlags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	for i, p := range parts {
		last := i == len(parts)-1
		flags := walkDirFlags | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if last {
			flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
		}
		fd, err := unix.Openat(dir, p, flags, 0)
		unix.Close(dir)
		if err != nil {
			return nil, err
		}
		if last {
			return os.NewFile(uintptr(fd), path), nil
		}
		dir = fd
	}
	unix.Close(dir)
	return nil, fmt.Errorf("%s names no file", path)
}

// fileOpenError says why the mux could not open path for a client, as a refusal where the rule is why.
func fileOpenError(path string, agent *osuser.User, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.EXDEV), errors.Is(err, unix.ENOTDIR):
		return refuseFile("%s is named through a symlink (the mux follows none: name the file itself)", path)
	case errors.Is(err, unix.EACCES), errors.Is(err, unix.EPERM):
		if agent != nil {
			return refuseFile("%s is not readable by the store's agent user %s itself", path, agent.Name)
		}
		return refuseFile("%s is not readable", path)
	case errors.Is(err, unix.ENOENT):
		return refuseFile("%s does not exist", path)
	}
	return refuseFile("%s cannot be opened: %v", path, err)
}

// inodeState is what a file's inode says of its names: which inode, how many names, and when a name of it
// last changed (a link, an unlink or a rename sets ctime).
type inodeState struct {
	dev, ino, nlink uint64
	ctime           unix.Timespec
}

func fstatState(f *os.File) (inodeState, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return inodeState{}, err
	}
	return stateOf(&st), nil
}

func lstatState(path string) (inodeState, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return inodeState{}, err
	}
	return stateOf(&st), nil
}

func stateOf(st *unix.Stat_t) inodeState {
	return inodeState{dev: uint64(st.Dev), ino: uint64(st.Ino), nlink: uint64(st.Nlink), ctime: st.Ctim}
}
