package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenDir: a folder opens; a symlink to one, and a file, are refused.
func TestOpenDir(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		path string
		ok   bool
	}{
		{"folder", real, true},
		{"symlink to a folder", link, false},
		{"file", file, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := OpenDir(tc.path)
			if (err == nil) != tc.ok {
				t.Fatalf("OpenDir(%q) error = %v; want ok %v", tc.path, err, tc.ok)
			}
			if f != nil {
				f.Close()
			}
		})
	}
}
