package service

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// Unsettled says why exe is no binary for a service to run, "" when it is one: a binary inside a git
// checkout of module (go.mod's module path: the project's own checkout, not a dotfiles repository that
// happens to hold the home) is replaced by the next build or checkout there, under the running service; one
// in a temporary directory (go run's, t.TempDir's, a download) is cleaned away. Both are where a newcomer's
// first binary sits, so install refuses them unless forced, and `go tool task install` puts one elsewhere.
func Unsettled(exe, module string) string {
	if root := checkoutOf(filepath.Dir(exe), module); root != "" {
		return exe + " is inside the git checkout " + root + ": the next build there replaces it under the running service"
	}
	if tmp := tempDirOf(exe); tmp != "" {
		return exe + " is under the temporary directory " + tmp + ", which is cleaned away"
	}
	return ""
}

// checkoutOf returns the work tree holding dir when it is a checkout of module: the nearest directory at or
// above dir with a .git (a directory, or a worktree's file) and a go.mod declaring module.
func checkoutOf(dir, module string) string {
	for {
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			if goModule(filepath.Join(dir, "go.mod")) == module {
				return dir
			}
			return ""
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// goModule reads the module path of a go.mod, "" when there is none.
func goModule(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// tempDirOf returns the temporary directory exe lies under ($TMPDIR, /tmp, /var/tmp, each also through
// its symlinks: macOS's /tmp is /private/tmp), "" for none.
func tempDirOf(exe string) string {
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		real = exe
	}
	for _, dir := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		candidates := []string{filepath.Clean(dir)}
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			candidates = append(candidates, r)
		}
		for _, d := range candidates {
			for _, p := range []string{exe, real} {
				if d != "/" && strings.HasPrefix(p, d+string(filepath.Separator)) {
					return dir
				}
			}
		}
	}
	return ""
}
