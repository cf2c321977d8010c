package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
	"vibebrowser/mux/errdefs"
)

const cookieValue = "SESSION-c00k1e-v4lue-7d1f"

// profileFiles is a profile as Chromium leaves it, in small: what a snapshot keeps and what it never does.
var profileFiles = map[string]string{
	"Local State":                              `{"profile":{"info_cache":{}}}`,
	"Default/Preferences":                      `{"session":{"restore_on_startup":1}}`,
	"Default/Secure Preferences":               `{}`,
	"Default/Cookies":                          "SQLite format 3\x00" + cookieValue,
	"Default/Cookies-journal":                  "",
	"Default/Login Data":                       "SQLite format 3\x00logins",
	"Default/Web Data":                         "SQLite format 3\x00autofill",
	"Default/Local Storage/leveldb/000003.log": "ls-item=remembered",
	"Default/Local Storage/leveldb/CURRENT":    "MANIFEST-000001\n",
	"Default/Local Storage/leveldb/LOCK":       "",
	"Default/Local Storage/leveldb/LOG":        "leveldb log",
	"Default/IndexedDB/https_a.test_0.indexeddb.leveldb/000003.log": "idb",
	"Default/Session Storage/000003.log":                            "ss",
	"Default/WebStorage/QuotaManager":                               "SQLite format 3\x00quota",
	"Default/History":                                               "SQLite format 3\x00history",
	"Default/Cache/Cache_Data/data_0":                               "cached " + cookieValue,
	"Default/Code Cache/js/index":                                   "code",
	"Default/LOCK":                                                  "",
	"Last Version":                                                  "156",
	"SingletonLock.txt":                                             "x",
}

var keptNames = []string{"Local State", "Default/Preferences", "Default/Secure Preferences", "Default/Cookies",
	"Default/Cookies-journal", "Default/Login Data", "Default/Web Data", "Default/Local Storage/leveldb/000003.log",
	"Default/Local Storage/leveldb/CURRENT", "Default/IndexedDB/https_a.test_0.indexeddb.leveldb/000003.log",
	"Default/Session Storage/000003.log", "Default/WebStorage/QuotaManager"}

func writeProfile(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "profile")
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Planted links: neither followed nor kept.
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "Default", "Login Data For Account")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "Default", "Local Storage"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, "Default", "Local Storage", "etc")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func testKey(t *testing.T) *seal.Key {
	t.Helper()
	k, err := seal.NewKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func testStore(t *testing.T, keep int) *Store {
	t.Helper()
	k := testKey(t)
	return &Store{Dir: filepath.Join(t.TempDir(), "snapshots"), Keep: keep, Key: func() (*seal.Key, error) { return k, nil }}
}

// readTree is every regular file under dir, by slash path.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKept(t *testing.T) {
	tests := []struct {
		rel  string
		want bool
	}{
		{"Local State", true},
		{"Default/Cookies", true},
		{"Default/Cookies-journal", true},
		{"Default/Cookies-wal", true},
		{"Default/Network/Cookies", true},
		{"Default/Login Data For Account-journal", true},
		{"Default/Local Storage/leveldb/000005.ldb", true},
		{"Default/Local Storage/leveldb/LOCK", false},
		{"Default/IndexedDB/x.indexeddb.blob/1/00/3", true},
		{"Default/History", false},
		{"Default/Cache/Cache_Data/data_0", false},
		{"Default/Code Cache/js/index", false},
		{"Default/GPUCache/data_1", false},
		{"Default/Sessions/Session_1", false},
		{"Default/Local Storage/../Cookies", false},
		{"/Local State", false},
		{"Default//Cookies", false},
		{"Profile 1/Cookies", false},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			if got := Kept(tt.rel); got != tt.want {
				t.Errorf("Kept(%q) = %v; want %v", tt.rel, got, tt.want)
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	st := testStore(t, 5)
	profile := writeProfile(t, profileFiles)
	jar := []byte("opaque jar bytes " + cookieValue)
	info, err := st.Take("shop", profile, jar, Full)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != Full || info.Size == 0 || !strings.HasSuffix(info.Path, info.ID+".snap") {
		t.Errorf("Take = %+v; want a full snapshot file named by its ID", info)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	got, err := st.Restore("shop", "", dest)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != info.ID || !bytes.Equal(got.Jar, jar) || got.Files != len(keptNames) {
		t.Errorf("Restore = id %s, jar %q, %d files; want %s, %q, %d", got.ID, got.Jar, got.Files, info.ID, jar, len(keptNames))
	}
	tree := readTree(t, dest)
	want := map[string]string{}
	for _, n := range keptNames {
		want[n] = profileFiles[n]
	}
	for n, body := range want {
		if tree[n] != body {
			t.Errorf("restored %q = %q; want %q", n, tree[n], body)
		}
	}
	for n := range tree {
		if _, ok := want[n]; !ok {
			t.Errorf("restored %q, which a snapshot does not keep", n)
		}
	}
	for _, p := range []string{dest, filepath.Join(dest, "Default", "Local Storage")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, %v; want 0700", p, fi.Mode().Perm(), err)
		}
	}
	if fi, err := os.Stat(filepath.Join(dest, "Default", "Cookies")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("restored Cookies: %v, %v; want 0600", fi.Mode().Perm(), err)
	}
	if _, err := st.Restore("shop", "", dest); err == nil {
		t.Error("Restore into a folder that exists succeeded; want it refused")
	}
}

func TestSealedFileRevealsNothing(t *testing.T) {
	st := testStore(t, 5)
	info, err := st.Take("shop", writeProfile(t, profileFiles), []byte(cookieValue), Full)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{"SQLite format 3", cookieValue, "ustar", "Cookies", "Local Storage", "ls-item"} {
		if bytes.Contains(raw, []byte(clear)) {
			t.Errorf("snapshot file holds %q in the clear", clear)
		}
	}
	if bytes.Contains(raw[:64], []byte{0x1f, 0x8b, 0x08}) {
		t.Error("snapshot file begins a gzip stream in the clear")
	}
	for _, p := range []string{info.Path, filepath.Dir(info.Path)} {
		fi, err := os.Stat(p)
		want := os.FileMode(0o600)
		if p != info.Path {
			want = 0o700
		}
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, %v; want %v", p, fi.Mode().Perm(), err, want)
		}
	}
}

func TestPruneKeepsNewest(t *testing.T) {
	st := testStore(t, 2)
	clock := time.Date(2026, 12, 5, 1, 0, 0, 0, time.UTC)
	st.Now = func() time.Time { clock = clock.Add(time.Minute); return clock }
	profile := writeProfile(t, profileFiles)
	var ids []string
	for range 4 {
		info, err := st.Take("shop", profile, nil, Full)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info.ID)
	}
	os.WriteFile(filepath.Join(st.Dir, "shop", ".snap-crashed.tmp"), []byte("x"), 0o600)
	if _, err := st.Take("shop", profile, nil, Full); err != nil {
		t.Fatal(err)
	}
	all, err := List(st.Dir, "shop")
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[0].At.Before(all[1].At) || all[1].ID <= ids[3] && all[1].ID != ids[3] {
		t.Errorf("List after 5 takes with Keep 2 = %+v; want the newest 2, newest first", all)
	}
	if fileExists(filepath.Join(st.Dir, "shop", ".snap-crashed.tmp")) {
		t.Error("a crashed take's temp file was left")
	}
	if _, err := Find(st.Dir, "shop", ids[0]); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Find(pruned %s) = %v; want errdefs.ErrNotFound", ids[0], err)
	}
	if got, err := Find(st.Dir, "shop", all[1].ID[:len(all[1].ID)-6]); err != nil || got.ID != all[1].ID {
		t.Errorf("Find(prefix) = %+v, %v; want %s", got, err, all[1].ID)
	}
	if _, err := Find(st.Dir, "other", ""); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("Find(a store with none) = %v; want errdefs.ErrNotFound", err)
	}
}

func TestDamagedSnapshotRefused(t *testing.T) {
	st := testStore(t, 5)
	profile := writeProfile(t, profileFiles)
	big := map[string]string{}
	for k, v := range profileFiles {
		big[k] = v
	}
	// Incompressible bytes, so the sealed file spans several chunks and a cut can fall on a chunk's end.
	noise := make([]byte, 300<<10)
	for i := range noise {
		noise[i] = byte(i*7919>>3) ^ byte(i>>11)
	}
	big["Default/IndexedDB/big.indexeddb.leveldb/000009.ldb"] = string(noise)
	bigProfile := writeProfile(t, big)
	tests := []struct {
		name   string
		damage func(b []byte) []byte
		slug   string
	}{
		{"byte flipped", func(b []byte) []byte { b[len(b)/2] ^= 1; return b }, "shop"},
		{"cut in half", func(b []byte) []byte { return b[:len(b)/2] }, "shop"},
		{"cut at a chunk's end", func(b []byte) []byte { return b[:len("vibe-sealed/1\n")+16+(64<<10)+16] }, "shop"},
		{"last byte gone", func(b []byte) []byte { return b[:len(b)-1] }, "shop"},
		{"another store's", func(b []byte) []byte { return b }, "other"},
		{"not sealed", func([]byte) []byte { return []byte("plain text") }, "shop"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := profile
			if strings.HasPrefix(tt.name, "cut at") {
				src = bigProfile
			}
			info, err := st.Take("shop", src, nil, Full)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := os.ReadFile(info.Path)
			if tt.slug != "shop" {
				os.MkdirAll(filepath.Join(st.Dir, tt.slug), 0o700)
				info.Path = filepath.Join(st.Dir, tt.slug, filepath.Base(info.Path))
			}
			if err := os.WriteFile(info.Path, tt.damage(raw), 0o600); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "restored")
			if _, err := st.Restore(tt.slug, info.ID, dest); !errors.Is(err, seal.ErrOpen) {
				t.Errorf("Restore(%s) = %v; want seal.ErrOpen", tt.name, err)
			}
			if fileExists(dest) {
				t.Errorf("Restore(%s) left %s", tt.name, dest)
			}
		})
	}
}

// sealedArchive is an archive of entries, sealed as slug's snapshot: what a hostile archive would be had it
// our key.
func sealedArchive(t *testing.T, k *seal.Key, slug string, entries []tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	sw, _ := k.NewWriter(&buf, purpose(slug))
	gz := gzip.NewWriter(sw)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		body := strings.Repeat("x", int(h.Size))
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(body))
	}
	tw.Close()
	gz.Close()
	sw.Close()
	return buf.Bytes()
}

func TestStrictArchive(t *testing.T) {
	reg := func(name string) tar.Header {
		return tar.Header{Typeflag: tar.TypeReg, Name: name, Size: 3, Mode: 0o600}
	}
	tests := []struct {
		name    string
		entries []tar.Header
	}{
		{"escapes with ..", []tar.Header{reg("profile/Default/Local Storage/../../../../x")}},
		{"absolute", []tar.Header{reg("/etc/cron.d/x")}},
		{"not kept", []tar.Header{reg("profile/Default/Cache/x")}},
		{"outside profile/", []tar.Header{reg("Default/Cookies")}},
		{"symlink", []tar.Header{{Typeflag: tar.TypeSymlink, Name: "profile/Default/Cookies", Linkname: "/etc/shadow"}}},
		{"hard link", []tar.Header{{Typeflag: tar.TypeLink, Name: "profile/Default/Cookies", Linkname: "profile/Local State"}}},
		{"device", []tar.Header{{Typeflag: tar.TypeChar, Name: "profile/Default/Cookies", Devmajor: 1, Devminor: 3}}},
		{"fifo", []tar.Header{{Typeflag: tar.TypeFifo, Name: "profile/Default/Cookies"}}},
		{"twice", []tar.Header{reg("profile/Default/Cookies"), reg("profile/Default/Cookies")}},
		{"a second jar", []tar.Header{reg("jar"), reg("jar")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := testStore(t, 5)
			k, _ := st.Key()
			os.MkdirAll(filepath.Join(st.Dir, "shop"), 0o700)
			p := filepath.Join(st.Dir, "shop", "20261205T010000.000000Z-full.snap")
			if err := os.WriteFile(p, sealedArchive(t, k, "shop", tt.entries), 0o600); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "restored")
			if _, err := st.Restore("shop", "", dest); err == nil {
				t.Errorf("Restore(archive with %s) succeeded; want it refused", tt.name)
			}
			if fileExists(dest) {
				t.Errorf("Restore(archive with %s) left %s", tt.name, dest)
			}
		})
	}
}

func TestLiveKeepsTheDatabasesOfTheSnapshotBefore(t *testing.T) {
	st := testStore(t, 5)
	profile := writeProfile(t, profileFiles)
	if _, err := st.Take("shop", profile, []byte("jar-1"), Full); err != nil {
		t.Fatal(err)
	}
	// The browser runs on: its databases change in place, its settings files are replaced whole.
	os.WriteFile(filepath.Join(profile, "Default", "Cookies"), []byte("SQLite format 3\x00torn mid-write"), 0o600)
	os.WriteFile(filepath.Join(profile, "Default", "Preferences"), []byte(`{"new":true}`), 0o600)
	info, err := st.Take("shop", profile, []byte("jar-2"), Live)
	if err != nil {
		t.Fatal(err)
	}
	if info.Kind != Live {
		t.Errorf("Take(Live).Kind = %s; want live", info.Kind)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	got, err := st.Restore("shop", info.ID, dest)
	if err != nil {
		t.Fatal(err)
	}
	tree := readTree(t, dest)
	if tree["Default/Cookies"] != profileFiles["Default/Cookies"] || tree["Default/Preferences"] != `{"new":true}` ||
		string(got.Jar) != "jar-2" || tree["Default/Local Storage/leveldb/000003.log"] != "ls-item=remembered" {
		t.Errorf("live snapshot restored Cookies %q, Preferences %q, jar %q; want the full one's Cookies and Local Storage, "+
			"the live Preferences and jar", tree["Default/Cookies"], tree["Default/Preferences"], got.Jar)
	}

	// With no snapshot before, a live one is its settings files and the jar.
	st2 := testStore(t, 5)
	info, err = st2.Take("shop", profile, []byte("jar-3"), Live)
	if err != nil {
		t.Fatal(err)
	}
	dest2 := filepath.Join(t.TempDir(), "restored")
	if _, err := st2.Restore("shop", info.ID, dest2); err != nil {
		t.Fatal(err)
	}
	if tree := readTree(t, dest2); len(tree) != 3 || tree["Default/Cookies"] != "" {
		t.Errorf("first live snapshot restored %v; want Local State, Preferences and Secure Preferences only", tree)
	}
}

func TestEmptyProfileIsNoSnapshot(t *testing.T) {
	st := testStore(t, 5)
	if _, err := st.Take("shop", writeProfile(t, map[string]string{"Default/Cache/x": "y"}), nil, Full); !errors.Is(err, ErrEmpty) || !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("Take of a profile with nothing kept = %v; want ErrEmpty (it would prune a good one)", err)
	}
	if _, err := st.Take("shop", filepath.Join(t.TempDir(), "never-made"), nil, Full); !errors.Is(err, ErrEmpty) {
		t.Errorf("Take of a profile never made = %v; want ErrEmpty", err)
	}
	if _, err := st.Take("../x", writeProfile(t, profileFiles), nil, Full); err == nil {
		t.Error("Take with slug ../x succeeded; want it refused")
	}
}

// The portable marker a snapshot keeps is the one the logins package writes.
func TestKeepsThePortableMarker(t *testing.T) {
	if portableMarker != logins.PortableMarker || !slices.Contains(keptFiles, logins.PortableMarker) ||
		!slices.Contains(liveFiles, logins.PortableMarker) {
		t.Errorf("the snapshot keeps %q; the logins package marks a portable profile with %q", portableMarker, logins.PortableMarker)
	}
}

// A snapshot taken on one host is imported on another (SPEC §19) as the same file, and restores; one that
// does not open (another key, another store's, cut short) or whose ID is no snapshot's is not added.
func TestImport(t *testing.T) {
	from, to := testStore(t, 5), testStore(t, 5)
	info, err := from.Take("shop", writeProfile(t, profileFiles), []byte("jar"), Full)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(info.Path)
	if err != nil {
		t.Fatal(err)
	}
	other := testStore(t, 5)
	otherKey, _ := seal.NewKey(bytes.Repeat([]byte{8}, 32))
	other.Key = func() (*seal.Key, error) { return otherKey, nil }
	foreign, err := other.Take("shop", writeProfile(t, profileFiles), nil, Full)
	if err != nil {
		t.Fatal(err)
	}
	foreignRaw, _ := os.ReadFile(foreign.Path)
	refused := []struct {
		name, slug, id string
		body           []byte
	}{
		{"another key", "shop", info.ID, foreignRaw},
		{"another store's", "other", info.ID, raw},
		{"cut short", "shop", info.ID, raw[:len(raw)-10]},
		{"a path for an ID", "shop", "../../etc/x", raw},
		{"no snapshot's ID", "shop", "latest", raw},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := to.Import(tt.slug, tt.id, bytes.NewReader(tt.body)); err == nil {
				t.Fatalf("Import = %+v; want it refused", got)
			}
			if all, _ := List(to.Dir, tt.slug); len(all) != 0 {
				t.Errorf("List after a refused import = %+v; want none", all)
			}
			if left, _ := filepath.Glob(filepath.Join(to.Dir, "*", ".snap-*")); len(left) != 0 {
				t.Errorf("temp files left: %v", left)
			}
		})
	}
	got, err := to.Import("shop", info.ID, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != info.ID || !got.At.Equal(info.At) || got.Kind != Full || got.Size != int64(len(raw)) {
		t.Errorf("Import = %+v; want %+v", got, info)
	}
	if fi, err := os.Stat(got.Path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("imported file: %v; want 0600", err)
	}
	r, err := to.Restore("shop", "", filepath.Join(t.TempDir(), "restored"))
	if err != nil || r.ID != info.ID || string(r.Jar) != "jar" {
		t.Errorf("Restore of the imported snapshot = %+v, %v; want %s with its jar", r, err, info.ID)
	}
}
