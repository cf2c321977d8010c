package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"vibebrowser/manager/service"
)

// private are the home's entries serve creates, with the modes it gives them (SPEC §2: directories 0700,
// secrets and sockets 0600). Others could read cookies from profiles/ or drive the browsers through run/.
var private = []struct {
	rel  string
	mode fs.FileMode
}{
	{".", 0o700}, {"run", 0o700}, {"bin", 0o700}, {"profiles", 0o700}, {"downloads", 0o700}, {"bh-tmp", 0o700},
	{"r", 0o700}, {"state.db", 0o600}, {"snapshots", 0o700}, {"snapshot.key", 0o600},
}

// sharedModes are the folders a home with bounded stores lets every user enter (SPEC §14: root's, 0711).
var sharedModes = map[string]fs.FileMode{".": 0o711, "run": 0o711, "bin": 0o711, "profiles": 0o711,
	"downloads": 0o711, "bh-tmp": 0o711, "r": 0o711}

// home checks that the home belongs to this user and that no one else can read it, nor enter it unless
// stores are bounded (then its shared folders are enterable by their agent and browser users).
func home(dir string, bounded bool) Check {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return ok("home", dir+" does not exist yet; vibe-browser serve creates it (mode 0700)")
	}
	if err != nil {
		return fail("home", err.Error(), "make "+dir+" readable by this user, or set VIBE_HOME to a directory of yours")
	}
	if !fi.IsDir() {
		return fail("home", dir+" is not a directory", "move it aside, or set VIBE_HOME to a directory of yours")
	}
	if uid, mine := ownedByMe(fi); !mine {
		return fail("home", fmt.Sprintf("%s belongs to uid %d, not to this user (uid %d)", dir, uid, os.Getuid()),
			"run vibe-browser as the home's owner, or chown -R "+fmt.Sprint(os.Getuid())+" "+service.ShellQuote(dir))
	}
	var loose, fixes []string
	for _, p := range private {
		if m, ok := sharedModes[p.rel]; ok && bounded {
			p.mode = m
		}
		path := filepath.Join(dir, p.rel)
		fi, err := os.Lstat(path)
		if err != nil {
			continue // serve creates what is missing
		}
		if got := fi.Mode().Perm(); got&^p.mode != 0 {
			loose = append(loose, fmt.Sprintf("%s has mode %04o (want %04o)", path, got, p.mode))
			fixes = append(fixes, fmt.Sprintf("chmod %o %s", p.mode, service.ShellQuote(path)))
		}
	}
	if len(loose) > 0 {
		return fail("home", strings.Join(loose, ", ")+": other users can read or enter it",
			strings.Join(fixes, " && "))
	}
	if bounded {
		return ok("home", dir+": yours; its shared folders enterable by the stores' users (0711), none listable")
	}
	return ok("home", dir+": yours, private (0700)")
}

// ownedByMe reports whether fi belongs to this process's user, and its owner's uid.
func ownedByMe(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, true // no owner to compare on this system
	}
	return st.Uid, int(st.Uid) == os.Getuid()
}
