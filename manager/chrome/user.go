package chrome

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"vibebrowser/mux/sys/osuser"
)

// A browser run as a store's browser user (SPEC §14, Options.User): the manager is root, the keeper and
// Chromium are that user. The manager gives them what they write (the profile, the keeper's folder and log),
// a HOME of their own, and checks before it starts them that they can reach what they run.

// homeName is the HOME of a browser run as its user, inside its profile: the store's own, kept with its
// cookies (Chromium's certificate database lives there), and never root's.
const homeName = ".home"

// userHome is the HOME of a browser run as its user on profile.
func userHome(profile string) string { return filepath.Join(profile, homeName) }

// managerOnlyEnv are the variables of the manager's environment that name its own user, folders or session:
// a browser run as another user gets its own, or none.
var managerOnlyEnv = []string{"HOME", "USER", "LOGNAME", "MAIL", "PWD", "OLDPWD", "TMPDIR",
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"DBUS_SESSION_BUS_ADDRESS"}

// userEnv is the environment of a process run as u, from base (the manager's): HOME is home, USER and
// LOGNAME are u's, and managerOnlyEnv is dropped, so Chromium never reaches for root's folders.
func userEnv(base []string, u *osuser.User, home string) []string {
	env := make([]string, 0, len(base)+3)
	for _, kv := range base {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(managerOnlyEnv, name) {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home, "USER="+u.Name, "LOGNAME="+u.Name)
}

// credential is what the browser's process (its keeper's, on the pipe) is started with: nil, the manager's
// own, or the user's uid, gid and groups.
func credential(u *osuser.User) *syscall.Credential {
	if u == nil {
		return nil
	}
	return u.Credential()
}

// owner is who a launch's files are given to.
type owner struct{ uid, gid int }

// filesOwner is who the profile and what the manager writes in it belong to: the browser user; with none,
// a root manager's own (a profile a former browser user still owns is taken back, so that user no longer
// reads it); nil when the manager is not root and cannot give files away.
func filesOwner(o Options) *owner {
	switch {
	case o.User != nil:
		return &owner{o.User.UID, o.User.GID}
	case os.Geteuid() == 0:
		return &owner{0, os.Getegid()}
	}
	return nil
}

// mayRun checks that u reaches what a launch as u needs: the binaries it runs and the folders it writes.
// Each failure names the path and what to do.
func mayRun(o Options) error {
	u := o.User
	runs := []string{o.Binary}
	if o.Transport == TransportPipe {
		runs = append(runs, o.Keeper[0])
	}
	for _, bin := range runs {
		if err := u.MayRead(bin); err != nil {
			return fmt.Errorf("the browser user %s runs %s: %w: install it where every user may read it (e.g. /usr/local/bin)", u.Name, bin, err)
		}
	}
	dirs := []string{o.ProfileDir}
	if o.Transport == TransportPipe {
		dirs = append(dirs, o.RunDir)
	}
	for _, dir := range dirs {
		if err := u.MayRead(dir); err != nil {
			return fmt.Errorf("the browser user %s writes %s: %w: let it enter every folder above (chmod o+x), or set VIBE_HOME to a folder it can enter", u.Name, dir, err)
		}
	}
	return nil
}
