package browsers

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"vibebrowser/mux"
	"vibebrowser/mux/downloads"
)

// sweepPartials removes the mux's unfinished copies (downloads.PartialSuffix) that a manager which died
// mid-download left in the owner folders. It runs at boot before any browser is adopted, while no mux of
// this manager is copying. A file under a final name is always complete: the mux links it there only when
// it is.
func (f *Fleet) sweepPartials() {
	f.sweepDownloads(func(slug string) (incoming, partials bool) { return false, true })
}

// sweepIncoming removes Chrome's partial files in the incoming folders of the browsers that are not running
// (an adopted browser may still be writing its own). It runs at boot after the adoptions.
func (f *Fleet) sweepIncoming() {
	running := map[string]bool{}
	for _, in := range f.Running() {
		running[in.spec.Slug] = true
	}
	f.sweepDownloads(func(slug string) (incoming, partials bool) { return !running[slug], false })
}

// sweepDownloads removes, per browser folder under downloads/, what which says: its incoming folder's
// entries, and the partial copies in its owner folders.
func (f *Fleet) sweepDownloads(which func(slug string) (incoming, partials bool)) {
	root := f.cfg.path("downloads")
	slugs, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			f.log.Error().Err(err).Str("dir", root).Msg("boot: sweep the downloads folder")
		}
		return
	}
	removed := 0
	for _, slug := range slugs {
		if !slug.IsDir() {
			continue
		}
		incoming, partials := which(slug.Name())
		if incoming {
			removed += f.removeEntries(filepath.Join(root, slug.Name(), downloads.IncomingDir), func(string) bool { return true })
			// The copies of files clients handed the browser (mux.UploadsDir) went with its tabs.
			removed += f.removeEntries(filepath.Join(root, slug.Name(), mux.UploadsDir), func(string) bool { return true })
		}
		if !partials {
			continue
		}
		owners, _ := os.ReadDir(filepath.Join(root, slug.Name()))
		for _, o := range owners {
			if o.IsDir() && o.Name() != downloads.IncomingDir && o.Name() != mux.UploadsDir {
				removed += f.removeEntries(filepath.Join(root, slug.Name(), o.Name()), func(name string) bool {
					return strings.HasSuffix(name, downloads.PartialSuffix)
				})
			}
		}
	}
	if removed > 0 {
		f.log.Info().Int("files", removed).Msg("boot: removed unfinished downloads")
	}
}

// removeEntries removes the entries of dir whose names match and returns how many went.
func (f *Fleet) removeEntries(dir string, match func(string) bool) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0 // no such folder yet
	}
	n := 0
	for _, e := range entries {
		if !match(e.Name()) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			f.log.Warn().Err(err).Str("file", filepath.Join(dir, e.Name())).Msg("remove an unfinished download")
			continue
		}
		n++
	}
	return n
}
