package browsers

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"vibebrowser/manager/keeper"
	"vibebrowser/mux/sys/atomicfile"
	"vibebrowser/mux/sys/osuser"
)

// Where keepers live (SPEC §13, §14). A browser of the manager's own user has its keeper's files in run/; a
// browser run as a browser user has them in run/keepers/<user>/, that user's 0700 folder (chrome.Launch makes
// it so), so no agent, and no other browser user, reaches its socket. run/ and run/keepers/ stay root's.

// keepersDir is the folder of the browser users' keeper folders.
func (c *Config) keepersDir() string { return c.path("run", "keepers") }

// keeperDirFor is the keeper's folder of a browser run as u (nil: the manager's own user).
func (c *Config) keeperDirFor(u *osuser.User) (string, error) {
	if u == nil {
		return c.path("run"), nil
	}
	if u.Name == "" || u.Name == "." || u.Name == ".." || strings.ContainsAny(u.Name, "/\x00") {
		return "", fmt.Errorf("browser user %q: a user name names its keepers' folder, so it holds no '/' and is not '.' or '..'", u.Name)
	}
	return filepath.Join(c.keepersDir(), u.Name), nil
}

// keeperDirOf is the keeper's folder of a browser recorded on the pipe at endpoint ("unix:<socket>"): the
// folder its socket is in, whatever the store's setting says now, so a running browser is adopted where it
// runs. It must be this home's run/ or a folder in run/keepers/, and the socket the keeper's of key.
func (c *Config) keeperDirOf(endpoint, key string) (string, error) {
	socket, ok := strings.CutPrefix(endpoint, "unix:")
	if !ok {
		return "", fmt.Errorf("endpoint %s is not a keeper's socket (unix:<path>)", endpoint)
	}
	socket = filepath.Clean(socket)
	dir := filepath.Dir(socket)
	switch {
	case socket != keeper.SocketPath(dir, key):
		return "", fmt.Errorf("endpoint %s is not the socket of keeper %s", endpoint, key)
	case dir == filepath.Clean(c.path("run")):
	case filepath.Dir(dir) == filepath.Clean(c.keepersDir()):
	default:
		return "", fmt.Errorf("endpoint %s is outside this home's run/ and run/keepers/ (another home's keeper)", endpoint)
	}
	return dir, nil
}

// KeeperDirs is every folder keepers may have left files in: run/ and each folder in run/keepers/.
func (c *Config) KeeperDirs() []string {
	dirs := []string{c.path("run")}
	ents, err := os.ReadDir(c.keepersDir())
	if err != nil {
		return dirs
	}
	for _, e := range ents {
		if e.IsDir() { // a symlink is not followed
			dirs = append(dirs, filepath.Join(c.keepersDir(), e.Name()))
		}
	}
	return dirs
}

// layOutBrowser readies the home for sp's browser run as u and returns its keeper's folder: run/keepers/
// root's, 0711, and the folders on the way to the keeper's folder, the profile and the downloads made
// enterable (o+x, their owner and the rest of their mode kept: root's 0711 once the home is laid out), so
// Chromium reaches its profile and the downloads' incoming folder and the keeper its own. chrome.Launch
// makes the keeper's folder and the profile u's own, 0700.
func (c *Config) layOutBrowser(sp Spec, u *osuser.User) (string, error) {
	dir, err := c.keeperDirFor(u)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(c.keepersDir(), 0o711); err != nil {
		return "", err
	}
	if err := rootsEnterable(c.keepersDir()); err != nil {
		return "", err
	}
	var errs []error
	for _, d := range []string{c.Home, c.path("run"), c.path("profiles"), c.path("downloads"), c.path("downloads", sp.Slug)} {
		errs = append(errs, enterable(d))
	}
	return dir, errors.Join(errs...)
}

// enterable lets every user enter dir (o+x, and g+x with it), keeping its owner and the rest of its mode.
func enterable(dir string) error {
	f, err := atomicfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if mode := fi.Mode().Perm(); mode&0o001 == 0 {
		if err := f.Chmod(mode | 0o011); err != nil {
			return fmt.Errorf("let the browser user enter %s: %w", dir, err)
		}
	}
	return nil
}

// rootsEnterable makes dir the manager's, 0711: enterable by every user, listable and changed by none.
func rootsEnterable(dir string) error {
	f, err := atomicfile.OpenDir(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("%s is uid %d's: the keepers' folders must be in a folder of the manager's own; remove it and let the manager make it again", dir, st.Uid)
	}
	return f.Chmod(0o711)
}
