package browsers

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rs/zerolog"

	"vibebrowser/mux"
	"vibebrowser/mux/downloads"
)

// downloadSweep clears, at boot, what downloads that never finished left under root (downloads/).
type downloadSweep struct {
	root string
	log  zerolog.Logger
}

// partials removes the mux's unfinished copies (downloads.PartialSuffix) that a manager which died
// mid-download left in the owner folders. It runs at boot before any browser is adopted, while no mux of
// this manager is copying. A file under a final name is always complete: the mux links it there only when
// it is.
func (d downloadSweep) partials() {
	d.sweep(func(slug string) (incoming, partials bool) { return false, true })
}

// incoming removes Chrome's partial files in the incoming folders of the browsers that are not running
// (an adopted browser may still be writing its own). It runs at boot after the adoptions.
func (d downloadSweep) incoming(run []*Instance) {
	running := map[string]bool{}
	for _, in := range run {
		running[in.spec.Slug] = true
	}
	d.sweep(func(slug string) (incoming, partials bool) { return !running[slug], false })
}

// sweep removes, per browser folder under downloads/, what which says: its incoming folder's
// entries, and the partial copies in its owner folders.
func (d downloadSweep) sweep(which func(slug string) (incoming, partials bool)) {
	root := d.root
	slugs, err := os.ReadDir(root)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.log.Error().Err(err).Str("dir", root).Msg("boot: sweep the downloads folder")
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
			removed += d.removeEntries(filepath.Join(root, slug.Name(), downloads.IncomingDir), func(string) bool { return true })
			// The copies of files clients handed the browser (mux.UploadsDir) went with its tabs.
			removed += d.removeEntries(filepath.Join(root, slug.Name(), mux.UploadsDir), func(string) bool { return true })
		}
		if !partials {
			continue
		}
		owners, _ := os.ReadDir(filepath.Join(root, slug.Name()))
		for _, o := range owners {
			if o.IsDir() && o.Name() != downloads.IncomingDir && o.Name() != mux.UploadsDir {
				removed += d.removeEntries(filepath.Join(root, slug.Name(), o.Name()), func(name string) bool {
					return strings.HasSuffix(name, downloads.PartialSuffix)
				})
			}
		}
	}
	if removed > 0 {
		d.log.Info().Int("files", removed).Msg("boot: removed unfinished downloads")
	}
}

// removeEntries removes the entries of dir whose names match and returns how many went.
func (d downloadSweep) removeEntries(dir string, match func(string) bool) int {
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
			d.log.Warn().Err(err).Str("file", filepath.Join(dir, e.Name())).Msg("remove an unfinished download")
			continue
		}
		n++
	}
	return n
}
