// Package logins keeps a store's login across its browser's deaths (SPEC §18): the sealed checkpoint of its
// cookie jar on disk, what a launch must set back from it, and whether its profile is portable.
package logins

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"vibebrowser/manager/seal"
	"vibebrowser/mux/sys/atomicfile"
	"vibebrowser/mux/sys/osuser"
)

// JarPath is the checkpoint of slug's cookie jar in home: logins/<slug>/jar.
func JarPath(home, slug string) string { return filepath.Join(home, "logins", slug, "jar") }

// purpose binds a checkpoint to its store: one store's jar never opens as another's, nor as a snapshot.
func purpose(slug string) string { return "jar:" + slug }

// ReadJar opens slug's checkpoint: its content (as Encode wrote it; opaque to a caller that only carries it)
// and when the file was written. A store with none yet fails with an error that errors.Is os.ErrNotExist;
// one that does not open (another key, altered, cut short) with one that errors.Is seal.ErrOpen.
func ReadJar(key *seal.Key, home, slug string) ([]byte, time.Time, error) {
	b, at, err := ReadSealedJar(home, slug)
	if err != nil {
		return nil, time.Time{}, err
	}
	content, err := key.Open(b, purpose(slug))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("open the login checkpoint %s: %w", JarPath(home, slug), err)
	}
	return content, at, nil
}

// ReadSealedJar is slug's checkpoint file as it is on disk, sealed, and when it was written: what a copy of
// it elsewhere (SPEC §19) holds. None yet is an error that errors.Is os.ErrNotExist.
func ReadSealedJar(home, slug string) ([]byte, time.Time, error) {
	b, fi, err := readRegular(JarPath(home, slug), maxJarFile)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("read the login checkpoint: %w", err)
	}
	return b, fi.ModTime(), nil
}

// OpenJar is the content of sealed, a checkpoint file of slug's (ReadSealedJar's, here or on another host),
// when key opens it as slug's: a jar of another store, or of another cluster, errors.Is seal.ErrOpen.
func OpenJar(key *seal.Key, slug string, sealed []byte) ([]byte, error) {
	content, err := key.Open(sealed, purpose(slug))
	if err != nil {
		return nil, fmt.Errorf("open a login checkpoint of %s: %w", slug, err)
	}
	return content, nil
}

// WriteJar seals content as slug's checkpoint and puts it in place atomically: a temp file in the same
// folder (0600), fsync'ed, renamed over the jar, then the folder fsync'ed, so a power cut leaves the old
// checkpoint or the new one, never a torn one. logins/ and logins/<slug>/ are made 0700; with owner (the
// store's browser user, SPEC §14) the store's folder and its jar are owner's, like its profile.
func WriteJar(key *seal.Key, home, slug string, content []byte, owner *osuser.User) error {
	path := JarPath(home, slug)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("write the login checkpoint: %w", err)
	}
	if owner != nil {
		if err := owner.Chown(dir); err != nil {
			return fmt.Errorf("write the login checkpoint: %w", err)
		}
	}
	tmp, err := os.CreateTemp(dir, ".jar-*")
	if err != nil {
		return fmt.Errorf("write the login checkpoint: %w", err)
	}
	err = writeSynced(tmp, key.Seal(content, purpose(slug)), owner)
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = atomicfile.SyncDir(dir)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write the login checkpoint %s: %w", path, err)
	}
	return nil
}

// maxJarFile bounds the checkpoint file read: a jar of 1,000 cookies is about 220 KiB.
const maxJarFile = 64 << 20

// readRegular reads path, a regular file of at most limit bytes, never through a symlink or from a FIFO (the
// store's folder is its browser user's: it could put either there).
func readRegular(path string, limit int64) ([]byte, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > limit {
		return nil, nil, fmt.Errorf("%s is not a regular file of at most %d bytes", path, limit)
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil {
		return nil, nil, err
	}
	return b, fi, nil
}

// RemoveJar removes slug's checkpoint, if any.
func RemoveJar(home, slug string) error {
	if err := os.Remove(JarPath(home, slug)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove the login checkpoint: %w", err)
	}
	return nil
}

// writeSynced writes b to f (CreateTemp made it 0600), gives it to owner, syncs and closes it.
func writeSynced(f *os.File, b []byte, owner *osuser.User) error {
	_, err := f.Write(b)
	if err == nil && owner != nil {
		err = owner.Chown(f.Name())
	}
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Version is the content format Encode writes.
const Version = 1

// Jar is a checkpoint's content: the browser's whole cookie jar when it was taken.
type Jar struct {
	Version int       `json:"version"`
	Taken   time.Time `json:"taken"`
	Cookies []Cookie  `json:"cookies"`
}

// Cookie is one cookie as Chrome's Storage.getCookies gives it (Network.Cookie), with the fields a restore
// needs to set it back as it was.
type Cookie struct {
	Name         string  `json:"name"`
	Value        string  `json:"value"`
	Domain       string  `json:"domain"`
	Path         string  `json:"path"`
	Expires      float64 `json:"expires"` // seconds since the epoch; -1 (with Session) for a session cookie
	HTTPOnly     bool    `json:"httpOnly"`
	Secure       bool    `json:"secure"`
	Session      bool    `json:"session"`
	SameSite     string  `json:"sameSite,omitempty"`
	Priority     string  `json:"priority,omitempty"`
	SourceScheme string  `json:"sourceScheme,omitempty"`
	SourcePort   int     `json:"sourcePort,omitempty"`
	// PartitionKey is a partitioned (CHIPS) cookie's key, as Chrome wrote it; nil for an unpartitioned one.
	PartitionKey json.RawMessage `json:"partitionKey,omitempty"`
}

// ParseCookies reads Chrome's JSON array of Network.Cookie (mux.Cookies).
func ParseCookies(raw []byte) ([]Cookie, error) {
	var cs []Cookie
	if err := json.Unmarshal(raw, &cs); err != nil {
		return nil, fmt.Errorf("the browser's cookies: %w", err)
	}
	return cs, nil
}

// Encode is a checkpoint's content for cookies taken at taken: the cookies in a stable order, so the same
// jar always encodes the same (Sum).
func Encode(cookies []Cookie, taken time.Time) []byte {
	cs := slices.Clone(cookies)
	slices.SortFunc(cs, func(a, b Cookie) int { return strings.Compare(a.key(), b.key()) })
	b, _ := json.Marshal(Jar{Version: Version, Taken: taken.UTC(), Cookies: cs}) // plain fields: no error
	return b
}

// Decode reads a checkpoint's content.
func Decode(content []byte) (Jar, error) {
	var j Jar
	if err := json.Unmarshal(content, &j); err != nil {
		return Jar{}, fmt.Errorf("the login checkpoint's content: %w", err)
	}
	if j.Version != Version {
		return Jar{}, fmt.Errorf("the login checkpoint's content is version %d; this manager reads %d", j.Version, Version)
	}
	return j, nil
}

// Sum is the hash of a jar's cookies, their order aside: a jar whose Sum has not changed is not written again.
func Sum(cookies []Cookie) [sha256.Size]byte {
	cs := slices.Clone(cookies)
	slices.SortFunc(cs, func(a, b Cookie) int { return strings.Compare(a.key(), b.key()) })
	b, _ := json.Marshal(cs)
	return sha256.Sum256(b)
}

// key is what makes a cookie one: a cookie set with the same name, domain, path and partition replaces it.
func (c Cookie) key() string {
	return c.Name + "\x00" + c.Domain + "\x00" + c.Path + "\x00" + string(compactJSON(c.PartitionKey))
}

func compactJSON(b json.RawMessage) []byte {
	var buf bytes.Buffer
	if len(b) == 0 || json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// expired reports whether a persistent cookie's time has passed at now.
func (c Cookie) expired(now time.Time) bool {
	return !c.Session && c.Expires > 0 && c.Expires <= float64(now.Unix())
}

// same reports whether the browser's cookie b is the checkpoint's c: its value, expiry (to the second:
// Chrome's own round trip loses precision) and attributes.
func (c Cookie) same(b Cookie) bool {
	return c.Value == b.Value && c.Session == b.Session && (c.Session || math.Abs(c.Expires-b.Expires) < 1) &&
		c.HTTPOnly == b.HTTPOnly && c.Secure == b.Secure && c.SameSite == b.SameSite
}

// Missing is what a launch sets back from a checkpoint: each of its cookies, unexpired at now, that the
// browser (holding have) lacks or holds with another value, expiry or attributes.
func Missing(checkpoint, have []Cookie, now time.Time) []Cookie {
	return missing(checkpoint, have, now, true)
}

// Lacking is the unexpired cookies of checkpoint that have has none of (by name, domain, path and
// partition): a browser whose profile is not the manager's keeps the value it holds, however it differs.
func Lacking(checkpoint, have []Cookie, now time.Time) []Cookie {
	return missing(checkpoint, have, now, false)
}

func missing(checkpoint, have []Cookie, now time.Time, differing bool) []Cookie {
	held := make(map[string]Cookie, len(have))
	for _, c := range have {
		held[c.key()] = c
	}
	var out []Cookie
	for _, c := range checkpoint {
		if c.expired(now) {
			continue
		}
		if b, ok := held[c.key()]; ok && (!differing || c.same(b)) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// cookieParam is Chrome's Network.CookieParam.
type cookieParam struct {
	Name         string          `json:"name"`
	Value        string          `json:"value"`
	URL          string          `json:"url,omitempty"`
	Domain       string          `json:"domain,omitempty"`
	Path         string          `json:"path,omitempty"`
	Secure       bool            `json:"secure,omitempty"`
	HTTPOnly     bool            `json:"httpOnly,omitempty"`
	SameSite     string          `json:"sameSite,omitempty"`
	Expires      float64         `json:"expires,omitempty"`
	Priority     string          `json:"priority,omitempty"`
	SourceScheme string          `json:"sourceScheme,omitempty"`
	SourcePort   int             `json:"sourcePort,omitempty"`
	PartitionKey json.RawMessage `json:"partitionKey,omitempty"`
}

// Params is cookies as Storage.setCookies takes them (a JSON array of Network.CookieParam), each set back as
// it was: a host-only cookie (Chrome writes its domain without a leading dot) by its URL, since a domain given
// to setCookies makes a domain cookie; a domain cookie by its domain; a session cookie with no expiry (-1 would
// be a time in the past, deleting it).
func Params(cookies []Cookie) []byte {
	ps := make([]cookieParam, 0, len(cookies))
	for _, c := range cookies {
		p := cookieParam{Name: c.Name, Value: c.Value, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly,
			SameSite: c.SameSite, Priority: c.Priority, SourceScheme: c.SourceScheme, PartitionKey: c.PartitionKey}
		if c.SourcePort > 0 {
			p.SourcePort = c.SourcePort
		}
		if !c.Session {
			p.Expires = c.Expires
		}
		if strings.HasPrefix(c.Domain, ".") {
			p.Domain = c.Domain
		} else {
			scheme := "http"
			if c.Secure || c.SourceScheme == "Secure" {
				scheme = "https"
			}
			p.URL = scheme + "://" + c.Domain + c.Path
		}
		ps = append(ps, p)
	}
	b, _ := json.Marshal(ps) // plain fields: no error
	return b
}
