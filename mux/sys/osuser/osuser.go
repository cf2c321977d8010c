// Package osuser is an operating-system user as the store boundary (SPEC §14) needs one: looked up by name,
// its credential for a child process, and whether it may read a file.
package osuser

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// User is one account: its ids, every group it is in, and its home.
type User struct {
	Name   string
	UID    int
	GID    int   // its primary group
	Groups []int // every group it is in, the primary one too
	Home   string
}

// Lookup finds the account called name. A name that is not an account's is refused with the line that makes it.
func Lookup(name string) (*User, error) {
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			return nil, fmt.Errorf("no user %q on this machine: create it with `useradd --system --no-create-home "+
				"--shell /usr/sbin/nologin %s`", name, name)
		}
		return nil, fmt.Errorf("look up user %q: %w", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("user %q has ids this system does not number: %w", name, err)
	}
	out := &User{Name: u.Username, UID: uid, GID: gid, Home: u.HomeDir, Groups: []int{gid}}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("groups of user %q: %w", name, err)
	}
	for _, g := range ids {
		if n, err := strconv.Atoi(g); err == nil && n != gid {
			out.Groups = append(out.Groups, n)
		}
	}
	return out, nil
}

// Credential is what a child process started as u runs with: its uid, gid and groups, and nothing else.
func (u *User) Credential() *syscall.Credential {
	groups := make([]uint32, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = uint32(g)
	}
	return &syscall.Credential{Uid: uint32(u.UID), Gid: uint32(u.GID), Groups: groups}
}

// Chown gives path to u (its primary group), without following a symlink.
func (u *User) Chown(path string) error { return os.Lchown(path, u.UID, u.GID) }

// MayRead reports why u may not read the file at path (nil when it may): every directory on the way must
// let u search it and the file must let u read it, by its owner, group or other bits, as the kernel decides
// for u's uid and groups. Symlinks are followed, each part checked where it leads. Root may read anything.
func (u *User) MayRead(path string) error {
	if u.UID == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return err
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		if err := u.may(dir, 0o1); err != nil {
			return err
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	return u.may(real, 0o4)
}

// may checks one permission (r = 4, x = 1) of path for u, by the bits that apply to u.
func (u *User) may(path string, perm fs.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner to check", path)
	}
	mode := fi.Mode().Perm()
	var bits fs.FileMode
	switch {
	case int(st.Uid) == u.UID:
		bits = mode >> 6
	case slices.Contains(u.Groups, int(st.Gid)):
		bits = mode >> 3
	default:
		bits = mode
	}
	if bits&perm == 0 {
		what := "read"
		if perm == 0o1 {
			what = "enter"
		}
		return fmt.Errorf("user %s may not %s %s (owner %d, group %d, mode %04o)", u.Name, what, path, st.Uid, st.Gid, mode)
	}
	return nil
}
