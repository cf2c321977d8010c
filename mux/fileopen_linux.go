package mux

import (
	"errors"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"vibebrowser/mux/sys/osuser"
)

// walkDirFlags open the folders of a path walked one by one: a path only (search permission, not read).
const walkDirFlags = unix.O_PATH

// openNoFollow opens path for reading without following any symlink on the way (openat2's
// RESOLVE_NO_SYMLINKS), as agent where the store has one: on a thread of its own whose credentials are
// dropped to agent's uid, gid and groups, so the kernel decides what agent may read, in the same open. The
// thread is never handed back (its goroutine exits locked to it, and the runtime ends it).
func openNoFollow(path string, agent *osuser.User) (*os.File, error) {
	type result struct {
		f   *os.File
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: see above
		if agent != nil && os.Geteuid() == 0 && agent.UID != 0 {
			if err := dropThread(agent); err != nil {
				ch <- result{err: err}
				return
			}
		}
		f, err := openat2(path)
		ch <- result{f, err}
	}()
	r := <-ch
	if r.err != nil {
		return nil, fileOpenError(path, agent, r.err)
	}
	return r.f, nil
}

// dropThread sets this thread's (not the process's: raw syscalls, not Go's all-threads wrappers) groups, gid
// and uid to u's.
func dropThread(u *osuser.User) error {
	groups := make([]uint32, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = uint32(g)
	}
	var p unsafe.Pointer
	if len(groups) > 0 {
		p = unsafe.Pointer(&groups[0])
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
		return e
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(u.GID), uintptr(u.GID), uintptr(u.GID)); e != 0 {
		return e
	}
	if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(u.UID), uintptr(u.UID), uintptr(u.UID)); e != 0 {
		return e
	}
	return nil
}

func openat2(path string) (*os.File, error) {
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY,
		Resolve: unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(unix.AT_FDCWD, path, &how)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if errors.Is(err, unix.ENOSYS) {
			return openWalk(path) // a kernel before 5.6
		}
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
