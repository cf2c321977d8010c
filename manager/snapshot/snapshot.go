// Package snapshot keeps sealed archives of a store's profile, its durable state by an allowlist, and rebuilds
// a profile from one (SPEC §18).
package snapshot

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"vibebrowser/manager/seal"
	"vibebrowser/mux/errdefs"
	"vibebrowser/mux/sys/atomicfile"
)

// Kind says how a snapshot was taken.
type Kind string

const (
	// Full is a stopped browser's profile: every kept file as the browser left it.
	Full Kind = "full"
	// Live is a running browser's: its settings files (liveFiles) and the jar read now, the databases and
	// storage folders of the snapshot before it (none when there was none), since Chromium writes those in
	// place while it runs and a copy of them would be torn.
	Live Kind = "live"
)

// Info is one snapshot file.
type Info struct {
	ID   string    `json:"id"` // its name without ".snap": the time taken (UTC) and its kind
	At   time.Time `json:"at"`
	Kind Kind      `json:"kind"`
	Size int64     `json:"size"` // bytes on disk, sealed
	Path string    `json:"path"`
}

var (
	// errNoSnapshot: no snapshot of the store, or none with the ID asked for; of class errdefs.errNoSnapshot.
	errNoSnapshot = errdefs.NotFound("no such snapshot")
	// ErrEmpty: the profile holds nothing a snapshot keeps (its browser never ran), so no snapshot is taken:
	// it would push a good one out. Of class errdefs.ErrConflict.
	ErrEmpty = errdefs.Conflict("nothing to snapshot")
)

// Archive entries: the profile's kept files under profilePrefix, and the cookie checkpoint's content (opaque
// bytes) as jarEntry.
const (
	profilePrefix = "profile/"
	jarEntry      = "jar"
	ext           = ".snap"
	timeLayout    = "20060102T150405.000000Z"
	maxJar        = 64 << 20
)

var nameRE = regexp.MustCompile(`^([0-9]{8}T[0-9]{6}\.[0-9]{6}Z)-(full|live)\.snap$`)

// Store keeps the snapshots of every store under Dir, one folder per store's slug.
type Store struct {
	Dir  string                    // VIBE_SNAPSHOT_DIR
	Keep int                       // how many each store keeps, newest first (at least 1)
	Key  func() (*seal.Key, error) // the seal, read when first needed
	Now  func() time.Time          // nil: time.Now

	mu    sync.Mutex // mu guards slugs
	slugs map[string]*sync.Mutex
}

// lock serializes what is done to one store's snapshots: taking, pruning, restoring.
func (st *Store) lock(slug string) func() {
	st.mu.Lock()
	if st.slugs == nil {
		st.slugs = map[string]*sync.Mutex{}
	}
	l := st.slugs[slug]
	if l == nil {
		l = &sync.Mutex{}
		st.slugs[slug] = l
	}
	st.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (st *Store) now() time.Time {
	if st.Now != nil {
		return st.Now()
	}
	return time.Now()
}

func purpose(slug string) string { return "snapshot:" + slug }

// slugDir is the folder of slug's snapshots; a slug is one path element.
func slugDir(dir, slug string) (string, error) {
	if slug == "" || slug == "." || slug == ".." || strings.ContainsAny(slug, "/\x00") {
		return "", fmt.Errorf("snapshot folder of %q: a slug is one path element", slug)
	}
	return filepath.Join(dir, slug), nil
}

// List is slug's snapshots under dir, newest first; none when its folder does not exist. It reads no
// snapshot, only the folder: it needs no key.
func List(dir, slug string) ([]Info, error) {
	d, err := slugDir(dir, slug)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range ents {
		m := nameRE.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		at, err := time.Parse(timeLayout, m[1])
		if err != nil {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // pruned meanwhile
		}
		out = append(out, Info{ID: strings.TrimSuffix(e.Name(), ext), At: at, Kind: Kind(m[2]), Size: fi.Size(),
			Path: filepath.Join(d, e.Name())})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out, nil
}

// Find is slug's snapshot id (its whole ID, or a prefix of exactly one), or the newest when id is "".
func Find(dir, slug, id string) (Info, error) {
	all, err := List(dir, slug)
	if err != nil {
		return Info{}, err
	}
	if len(all) == 0 {
		return Info{}, fmt.Errorf("%w: store %s has no snapshot in %s", errNoSnapshot, slug, dir)
	}
	if id == "" {
		return all[0], nil
	}
	var match []Info
	for _, in := range all {
		if in.ID == id {
			return in, nil
		}
		if strings.HasPrefix(in.ID, id) {
			match = append(match, in)
		}
	}
	switch len(match) {
	case 1:
		return match[0], nil
	case 0:
		return Info{}, fmt.Errorf("%w: store %s has no snapshot %q (vibe-browser store snapshots %s lists them)", errNoSnapshot, slug, id, slug)
	}
	return Info{}, fmt.Errorf("%w: %q begins %d snapshots of store %s: give more of its ID", errNoSnapshot, id, len(match), slug)
}

// Take snapshots profile, slug's, as kind with jar (the checkpoint's opened content; nil when there is none)
// into a new sealed file, then keeps the newest Keep. Full reads every kept file of a stopped browser's
// profile; Live reads only liveFiles and takes the rest from the newest snapshot before it.
func (st *Store) Take(slug, profile string, jar []byte, kind Kind) (Info, error) {
	key, err := st.Key()
	if err != nil {
		return Info{}, err
	}
	dir, err := slugDir(st.Dir, slug)
	if err != nil {
		return Info{}, err
	}
	unlock := st.lock(slug)
	defer unlock()
	var base *Info
	if kind == Live {
		if prev, err := Find(st.Dir, slug, ""); err == nil {
			base = &prev
		} else if !errors.Is(err, errNoSnapshot) {
			return Info{}, err
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Info{}, fmt.Errorf("snapshot folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return Info{}, fmt.Errorf("snapshot folder: %w", err)
	}
	at := st.now().UTC().Truncate(time.Microsecond)
	name := at.Format(timeLayout) + "-" + string(kind) + ext
	for fileExists(filepath.Join(dir, name)) { // two in one microsecond
		at = at.Add(time.Microsecond)
		name = at.Format(timeLayout) + "-" + string(kind) + ext
	}
	tmp, err := os.CreateTemp(dir, ".snap-*.tmp")
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	err = st.write(tmp, key, slug, profile, jar, kind, base)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return Info{}, fmt.Errorf("snapshot of %s: %w", slug, err)
	}
	atomicfile.SyncDir(dir)
	info := Info{ID: strings.TrimSuffix(name, ext), At: at, Kind: kind, Path: filepath.Join(dir, name)}
	if fi, err := os.Stat(info.Path); err == nil {
		info.Size = fi.Size()
	}
	return info, st.pruneLocked(slug)
}

// write seals the archive of one snapshot into w: tar, gzip, then the seal, so nothing of the profile, not
// even the archive's headers, is in the clear.
func (st *Store) write(w io.Writer, key *seal.Key, slug, profile string, jar []byte, kind Kind, base *Info) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	sw, err := key.NewWriter(bw, purpose(slug))
	if err != nil {
		return err
	}
	gz := gzip.NewWriter(sw)
	tw := tar.NewWriter(gz)
	n, err := addProfile(tw, profile, kind)
	if err != nil {
		return err
	}
	if base != nil {
		carried, err := st.carry(tw, key, slug, *base)
		if err != nil {
			return fmt.Errorf("the databases of snapshot %s: %w", base.ID, err)
		}
		n += carried
	}
	if n == 0 {
		return fmt.Errorf("%w: profile %s holds nothing a snapshot keeps (has its browser run yet?)", ErrEmpty, profile)
	}
	if jar != nil {
		if err := tw.WriteHeader(fileHeader(jarEntry, int64(len(jar)), time.Time{})); err != nil {
			return err
		}
		if _, err := tw.Write(jar); err != nil {
			return err
		}
	}
	return errors.Join(tw.Close(), gz.Close(), sw.Close(), bw.Flush())
}

func fileHeader(name string, size int64, mod time.Time) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600, ModTime: mod, Format: tar.FormatPAX}
}

// addProfile archives the kept files of profile (only liveFiles for Live), read from inside it: a symlink, a
// FIFO or a device there is skipped, never followed or waited on. It returns how many it archived.
func addProfile(tw *tar.Writer, profile string, kind Kind) (int, error) {
	root, err := os.OpenRoot(profile)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil // nothing in it
	}
	if err != nil {
		return 0, fmt.Errorf("open the profile: %w", err)
	}
	defer root.Close()
	n := 0
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed meanwhile
			}
			return err
		}
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if !descend(rel) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !Kept(rel) || kind == Live && !slices.Contains(liveFiles, rel) {
			return nil
		}
		ok, err := addFile(tw, root, rel)
		if ok {
			n++
		}
		return err
	})
	return n, err
}

// addFile archives root's regular file rel; a file gone meanwhile or no longer regular is skipped.
func addFile(tw *tar.Writer, root *os.Root, rel string) (bool, error) {
	f, err := root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ELOOP) {
			return false, nil
		}
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, nil
	}
	if err := tw.WriteHeader(fileHeader(profilePrefix+rel, fi.Size(), fi.ModTime())); err != nil {
		return false, err
	}
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return false, fmt.Errorf("%s: %w", rel, err)
	}
	return true, nil
}

// carry copies into tw every file of base that a live snapshot does not read itself: its databases and
// storage folders. base is read whole, so a damaged one fails the snapshot.
func (st *Store) carry(tw *tar.Writer, key *seal.Key, slug string, base Info) (int, error) {
	n := 0
	err := readArchive(key, slug, base.Path, func(rel string, size int64, mod time.Time, r io.Reader) error {
		if rel == jarEntry || slices.Contains(liveFiles, strings.TrimPrefix(rel, profilePrefix)) {
			return nil
		}
		if err := tw.WriteHeader(fileHeader(rel, size, mod)); err != nil {
			return err
		}
		_, err := io.CopyN(tw, r, size)
		n++
		return err
	})
	return n, err
}

// readArchive opens the sealed snapshot at path and calls each for every entry, checked first: a regular
// file, the jar or a kept profile file by a clean relative name, each once. Anything else (a link, a device,
// a name that leads out or is not kept, a second copy) fails the read, as does a seal that does not open to
// its end: each's effects are the caller's to undo then.
func readArchive(key *seal.Key, slug, path string, each func(name string, size int64, mod time.Time, r io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sr, err := key.NewReader(f, purpose(slug))
	if err != nil {
		return err
	}
	gz, err := gzip.NewReader(sr)
	if err != nil {
		return fmt.Errorf("%w (no archive inside)", seal.ErrOpen)
	}
	tr := tar.NewReader(gz)
	seen := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if err := checkEntry(hdr, seen); err != nil {
			return err
		}
		if err := each(hdr.Name, hdr.Size, hdr.ModTime, tr); err != nil {
			return err
		}
	}
	// The seal's last chunk is checked only at its end: read it, so a file cut short is refused.
	if _, err := io.Copy(io.Discard, gz); err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	return nil
}

// checkEntry is the strict reading of one entry of our own archive.
func checkEntry(hdr *tar.Header, seen map[string]bool) error {
	name := hdr.Name
	if hdr.Typeflag != tar.TypeReg {
		return fmt.Errorf("archive entry %q: type %q refused: a snapshot holds regular files only", name, hdr.Typeflag)
	}
	rel, isProfile := strings.CutPrefix(name, profilePrefix)
	switch {
	case name == jarEntry:
		if hdr.Size > maxJar {
			return fmt.Errorf("archive entry %q: %d bytes, more than a jar holds", name, hdr.Size)
		}
	case !isProfile || !Kept(rel):
		return fmt.Errorf("archive entry %q refused: not a file a snapshot keeps", name)
	}
	if hdr.Size < 0 || seen[name] {
		return fmt.Errorf("archive entry %q refused: a second copy or a bad size", name)
	}
	seen[name] = true
	return nil
}

// Restored is what Restore made.
type Restored struct {
	Info
	Files int    // profile files written
	Jar   []byte // the checkpoint's content the snapshot holds; nil when it holds none
}

// Restore builds a profile from snapshot id of slug ("" = the newest) in dest, a folder it makes (0700; its
// files 0600) and that must not exist yet. Nothing is left in dest when it fails: a snapshot that does not
// open to its end, or holds anything but kept files, makes no profile.
func (st *Store) Restore(slug, id, dest string) (Restored, error) {
	key, err := st.Key()
	if err != nil {
		return Restored{}, err
	}
	unlock := st.lock(slug)
	defer unlock()
	info, err := Find(st.Dir, slug, id)
	if err != nil {
		return Restored{}, err
	}
	if err := os.Mkdir(dest, 0o700); err != nil {
		return Restored{}, fmt.Errorf("restore snapshot %s: %w", info.ID, err)
	}
	out := Restored{Info: info}
	err = extract(key, slug, info.Path, dest, &out)
	if err != nil {
		os.RemoveAll(dest)
		return Restored{}, fmt.Errorf("restore snapshot %s of %s: %w", info.ID, slug, err)
	}
	return out, nil
}

func extract(key *seal.Key, slug, path, dest string, out *Restored) error {
	root, err := os.OpenRoot(dest)
	if err != nil {
		return err
	}
	defer root.Close()
	err = readArchive(key, slug, path, func(name string, size int64, mod time.Time, r io.Reader) error {
		if name == jarEntry {
			jar, err := io.ReadAll(io.LimitReader(r, size))
			out.Jar = jar
			return err
		}
		rel := filepath.FromSlash(strings.TrimPrefix(name, profilePrefix))
		if dir := filepath.Dir(rel); dir != "." {
			if err := root.MkdirAll(dir, 0o700); err != nil {
				return err
			}
		}
		f, err := root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return err
		}
		_, err = io.CopyN(f, r, size)
		if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if !mod.IsZero() {
			_ = root.Chtimes(rel, mod, mod)
		}
		out.Files++
		return nil
	})
	if err != nil {
		return err
	}
	atomicfile.SyncDir(dest)
	return nil
}

// Import adds snapshot id of slug, read from r as it was sealed where it was taken (another host's copy, SPEC
// §19), beside slug's own. It is checked first, whole: a file that does not open to its end with the key, or
// holds anything but kept files, is not added (it would be the newest, on which every live snapshot builds).
func (st *Store) Import(slug, id string, r io.Reader) (Info, error) {
	key, err := st.Key()
	if err != nil {
		return Info{}, err
	}
	dir, err := slugDir(st.Dir, slug)
	if err != nil {
		return Info{}, err
	}
	m := nameRE.FindStringSubmatch(id + ext)
	if m == nil {
		return Info{}, errdefs.Invalid("snapshot %q of %s refused: a snapshot's ID is its time and kind (20060102T150405.000000Z-full)", id, slug)
	}
	at, err := time.Parse(timeLayout, m[1])
	if err != nil {
		return Info{}, errdefs.Invalid("snapshot %q of %s refused: %v", id, slug, err)
	}
	unlock := st.lock(slug)
	defer unlock()
	info := Info{ID: id, At: at, Kind: Kind(m[2]), Path: filepath.Join(dir, id+ext)}
	if fileExists(info.Path) {
		return info, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Info{}, fmt.Errorf("snapshot folder: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".snap-*.tmp")
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: %w", err)
	}
	info.Size, err = io.Copy(tmp, r)
	err = errors.Join(err, tmp.Sync(), tmp.Close())
	if err == nil {
		err = readArchive(key, slug, tmp.Name(), func(string, int64, time.Time, io.Reader) error { return nil })
	}
	if err == nil {
		err = os.Rename(tmp.Name(), info.Path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return Info{}, fmt.Errorf("import snapshot %s of %s: %w", id, slug, err)
	}
	atomicfile.SyncDir(dir)
	return info, st.pruneLocked(slug)
}

// pruneLocked keeps slug's newest Keep snapshots and removes the rest, and temp files a crash left.
func (st *Store) pruneLocked(slug string) error {
	all, err := List(st.Dir, slug)
	if err != nil {
		return err
	}
	var errs []error
	for i, in := range all {
		if i >= max(st.Keep, 1) {
			if err := os.Remove(in.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	dir, _ := slugDir(st.Dir, slug)
	if tmps, err := filepath.Glob(filepath.Join(dir, ".snap-*.tmp")); err == nil {
		for _, t := range tmps { // under the store's lock no other snapshot is being written
			os.Remove(t)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("prune snapshots of %s: %w", slug, errors.Join(errs...))
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}
