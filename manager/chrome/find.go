package chrome

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// pathCandidates are looked up on PATH, in order.
var pathCandidates = []string{"chromium", "chromium-browser", "google-chrome"}

// bundleCandidates are the macOS app bundle executables tried after PATH; a variable so tests can point it
// at a temp dir.
var bundleCandidates = []string{
	"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
	"/Applications/Chromium.app/Contents/MacOS/Chromium",
}

// Find returns the browser binary: explicit if non-empty (a path that must exist, or a bare name looked up
// on PATH), else the first of chromium, chromium-browser, google-chrome on PATH, else the macOS app bundle.
// A missing browser is ErrNoBrowser.
func Find(explicit string) (string, error) {
	if explicit != "" {
		if !strings.ContainsRune(explicit, os.PathSeparator) {
			p, err := exec.LookPath(explicit)
			if err != nil {
				return "", fmt.Errorf("browser %q not on PATH: %w", explicit, ErrNoBrowser)
			}
			return p, nil
		}
		if err := isExecutable(explicit); err != nil {
			return "", fmt.Errorf("browser %s: %v: %w", explicit, err, ErrNoBrowser)
		}
		return explicit, nil
	}
	for _, name := range pathCandidates {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	for _, p := range bundleCandidates {
		if isExecutable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("none of %s on PATH and no Chrome app bundle (set VIBE_CHROME): %w",
		strings.Join(pathCandidates, ", "), ErrNoBrowser)
}

func isExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("is a directory")
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("not executable")
	}
	return nil
}
