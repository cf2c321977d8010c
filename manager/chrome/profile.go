package chrome

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"vibebrowser/mux/sys/procid"
)

// singletonFiles are Chromium's per-profile instance markers. SingletonLock is a symlink to "<host>-<pid>".
var singletonFiles = []string{"SingletonLock", "SingletonSocket", "SingletonCookie"}

// devToolsActivePort is the file Chromium writes into the profile once its debugging port is bound:
// the port on the first line, the browser target's websocket path on the second.
const devToolsActivePort = "DevToolsActivePort"

// ProfileHolder returns the pid of a live Chromium holding profileDir: the pid named by the profile's
// SingletonLock symlink ("<host>-<pid>") is running (not a zombie) and its command line names
// --user-data-dir=<profileDir>. A lock naming a dead or unrelated process is not a hold.
func ProfileHolder(profileDir string) (pid int, held bool) {
	target, err := os.Readlink(filepath.Join(profileDir, "SingletonLock"))
	if err != nil {
		return 0, false
	}
	i := strings.LastIndexByte(target, '-')
	if i < 0 {
		return 0, false
	}
	pid, err = strconv.Atoi(target[i+1:])
	if err != nil || pid <= 0 {
		return 0, false
	}
	info, ok := procid.Live(context.Background(), pid)
	if !ok || !namesProfile(info.Cmdline, profileDir) {
		return 0, false
	}
	return pid, true
}

// clearSingletons removes the profile's Singleton* files unless a live Chromium holds the profile, in which
// case it returns a *ProfileInUseError and touches nothing.
func clearSingletons(profileDir string) error {
	if pid, held := ProfileHolder(profileDir); held {
		return &ProfileInUseError{ProfileDir: profileDir, PID: pid}
	}
	for _, name := range singletonFiles {
		if err := os.Remove(filepath.Join(profileDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: clear %s: %v", ErrProfileUnready, name, err)
		}
	}
	return nil
}

// readDevToolsActivePort returns the port and browser websocket path Chromium wrote into the profile (read
// from inside it: profilefiles.go).
func readDevToolsActivePort(profileDir string) (port int, wsPath string, err error) {
	root, err := os.OpenRoot(profileDir)
	if err != nil {
		return 0, "", err
	}
	defer root.Close()
	data, err := readIn(root, devToolsActivePort, 4<<10)
	if err != nil {
		return 0, "", err
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	port, err = strconv.Atoi(strings.TrimSpace(lines[0]))
	if err != nil || port <= 0 || port > 65535 {
		// Chromium writes the file in one go, but a reader can still catch it half-written.
		return 0, "", fmt.Errorf("%s: bad port %q", devToolsActivePort, lines[0])
	}
	if len(lines) > 1 {
		wsPath = strings.TrimSpace(lines[1])
	}
	return port, wsPath, nil
}
