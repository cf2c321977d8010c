package clusterhost

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"vibebrowser/mux/downloads"
	"vibebrowser/mux/sys/osuser"
)

// A client of this host that drives a store of another host asked for its own copy of its downloads
// (Browser.setDownloadBehavior with a downloadPath: playwright's acceptDownloads, puppeteer, browser-harness):
// the folder is on this host, where the client runs and reads the file when it hears "completed". The store's
// host says the request in the download's header; this host makes the copy by a local mux's rules (the same
// downloads.Filer: with the store's agent user only into a folder that user owns, the file that user's;
// without one at <downloadPath>/<guid> or under a unique name), never over an existing file. The request
// crossed the network, so its folder is checked first: absolute and clean, and leading through no symlink.

// ownCopyHead is a client's own-copy request in a download's header.
type ownCopyHead struct {
	Dir   string `json:"dir"`   // the client's downloadPath
	Exact bool   `json:"exact"` // allowAndName: at <dir>/<guid>; allow: under a unique name in dir
}

// ownCopy makes the client's own copy of final, the download just placed in its owner folder, where own asks,
// and returns its path.
func ownCopy(final string, agent *osuser.User, own ownCopyHead, name, guid string) (string, error) {
	if err := checkOwnDir(own.Dir); err != nil {
		return "", err
	}
	if own.Exact && (guid == "." || guid == ".." || strings.ContainsAny(guid, "/\x00")) {
		return "", fmt.Errorf("GUID %q: a download whose client asked for <downloadPath>/<guid> has a GUID that is one file name", guid)
	}
	if agent == nil {
		// As a local mux's PlaceExact does, a missing folder is made, below a path already checked.
		if err := makeOwnDir(own.Dir); err != nil {
			return "", err
		}
	}
	if err := noSymlinks(own.Dir); err != nil {
		return "", err
	}
	return downloads.Filer{Agent: agent}.PlaceOwn(final, downloads.OwnCopy{Dir: own.Dir, Exact: own.Exact}, name, guid)
}

// checkOwnDir checks the form of a client's downloadPath: absolute, clean, no NUL.
func checkOwnDir(dir string) error {
	switch {
	case strings.ContainsRune(dir, 0):
		return fmt.Errorf("downloadPath %q: a client's downloadPath has no NUL", dir)
	case !filepath.IsAbs(dir):
		return fmt.Errorf("downloadPath %q: a client's downloadPath is absolute", dir)
	case filepath.Clean(dir) != dir:
		return fmt.Errorf("downloadPath %q: a client's downloadPath is clean (no \"..\", \".\", doubled or trailing "+
			"separators): %q", dir, filepath.Clean(dir))
	}
	return nil
}

// makeOwnDir makes dir (0700) when it is missing, once the deepest folder of its path that exists was checked
// to lead through no symlink: what is made is then where the path says.
func makeOwnDir(dir string) error {
	have := dir
	for {
		_, err := os.Lstat(have)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(have) == have {
			return fmt.Errorf("the client's download folder: %w", err)
		}
		have = filepath.Dir(have)
	}
	if have == dir {
		return nil
	}
	if err := noSymlinks(have); err != nil {
		return err
	}
	return os.MkdirAll(dir, 0o700)
}

// noSymlinks checks that dir is a folder whose path leads through no symlink: a client's own copy is put where
// its path says, never where a link leads.
func noSymlinks(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("the client's download folder: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return fmt.Errorf("the client's download folder: %w", err)
	}
	if !fi.IsDir() || resolved != dir {
		return fmt.Errorf("downloadPath %s leads through a symlink (to %s): a client's downloadPath is a folder whose "+
			"path has no symlink", dir, resolved)
	}
	return nil
}
