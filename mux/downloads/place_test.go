package downloads

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestDownloadCopiesAcrossFileSystems: where a hard link cannot be made (the client's folder on another
// file system, as /tmp on tmpfs often is), the file is copied under a partial name and renamed, so it is
// complete whenever it has its final name, and never over an existing file.
func TestDownloadCopiesAcrossFileSystems(t *testing.T) {
	other, err := os.MkdirTemp("/dev/shm", "vibe-dl-")
	if err != nil {
		t.Skip("no /dev/shm to put a second file system under the test")
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	dir := t.TempDir()
	var a, b syscall.Stat_t
	if syscall.Stat(other, &a) != nil || syscall.Stat(dir, &b) != nil || a.Dev == b.Dev {
		t.Skip("/dev/shm is on the test's own file system")
	}
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("content"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(other, "r.csv"), []byte("theirs"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := Filer{}.PlaceUnique(src, other, "r.csv")
	if err != nil || got != filepath.Join(other, "r (1).csv") {
		t.Fatalf("placeUnique across file systems = %q, %v; want %s", got, err, filepath.Join(other, "r (1).csv"))
	}
	if err := (Filer{}).PlaceExact(src, filepath.Join(other, "guid")); err != nil {
		t.Fatal(err)
	}
	if err := (Filer{}).PlaceExact(src, filepath.Join(other, "r.csv")); err == nil {
		t.Error("PlaceExact over an existing file across file systems = nil; want refused")
	}
	for name, want := range map[string]string{"r.csv": "theirs", "r (1).csv": "content", "guid": "content"} {
		if b, err := os.ReadFile(filepath.Join(other, name)); err != nil || string(b) != want {
			t.Errorf("%s holds %q, %v; want %q", name, b, err, want)
		}
	}
	if entries, _ := os.ReadDir(other); len(entries) != 3 {
		t.Errorf("the client's folder holds %d entries; want 3 (no partial copy left)", len(entries))
	}
}

// TestPlaceExactNeverOverwrites: a client's <downloadPath>/<guid> that already holds a file keeps it.
func TestPlaceExactNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "own", "guid")
	for p, c := range map[string]string{src: "content", dst: "theirs"} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := (Filer{}).PlaceExact(src, dst); err == nil {
		t.Errorf("PlaceExact(%q) over an existing file = nil; want refused", dst)
	}
	if b, _ := os.ReadFile(dst); string(b) != "theirs" {
		t.Errorf("%s holds %q; want %q", dst, b, "theirs")
	}
}
