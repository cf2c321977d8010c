package reaper

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"vibebrowser/manager/api"
)

// Where stores are an OS boundary (SPEC §14) a store's daemons record themselves in its own runtime folder,
// <Dir>/<slug>/ (the web browser's: <Dir>/_web/), which its agent user owns and writes; the others' in Dir.
// A pid file is only as good as its writer: one in a folder owned by uid proves a daemon of uid and nothing
// else, so an agent cannot have the manager, which may be root, stop another store's daemon, or any process
// of another user, by naming it.

// place is a folder of pid files and the uid of the daemons they may prove: the folder's owner.
type place struct {
	dir string
	uid int
}

// entry is one bu-<name>.pid in its place.
type entry struct {
	place place
	name  string
}

// pidFiles lists the pid files of Dir and of each known store's own folder in it (a folder, not a symlink),
// Dir's first.
func pidFiles(dir string, slugs []string) ([]entry, error) {
	top, err := placeOf(dir)
	if err != nil {
		return nil, err
	}
	out, err := pidFilesIn(top)
	if err != nil {
		return nil, err
	}
	for _, slug := range append([]string{api.WebKey}, slugs...) {
		if slug == "" || slug == "." || slug == ".." || strings.ContainsRune(slug, '/') {
			continue
		}
		pl, err := placeOf(filepath.Join(dir, slug))
		if err != nil {
			continue // none: the store is no boundary, or its agents never ran
		}
		in, err := pidFilesIn(pl)
		if err != nil {
			return nil, err
		}
		out = append(out, in...)
	}
	return out, nil
}

// placeOf is dir, a folder itself (never a symlink), with its owner.
func placeOf(dir string) (place, error) {
	fi, err := os.Lstat(dir)
	if err != nil {
		return place{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return place{}, fmt.Errorf("%s is not a folder", dir)
	}
	return place{dir: dir, uid: int(st.Uid)}, nil
}

// pidFilesIn lists the regular bu-<name>.pid files in pl.
func pidFilesIn(pl place) ([]entry, error) {
	ents, err := os.ReadDir(pl.dir)
	if err != nil {
		return nil, err
	}
	var out []entry
	for _, e := range ents {
		name, found := strings.CutPrefix(e.Name(), "bu-")
		name, isPid := strings.CutSuffix(name, ".pid")
		if found && isPid && e.Type().IsRegular() {
			out = append(out, entry{place: pl, name: name})
		}
	}
	return out, nil
}
