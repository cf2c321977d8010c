package state

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileState is what a reader could have changed: the file's bytes and mode, and which files lie beside it
// (but the -wal and -shm companions SQLite creates to read a WAL database).
func fileState(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), "-wal") && !strings.HasSuffix(e.Name(), "-shm") {
			names = append(names, e.Name())
		}
	}
	return fmt.Sprintf("%x %v %v", sha256.Sum256(b), fi.Mode(), names)
}

func TestOpenReadOnlyReadsWithoutWriting(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	db := openPath(t, path)
	s, err := db.CreateStore(ctx, Store{Name: "Acme", Backend: BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ports().Allocate(ctx, s.ID, 19400, func(int) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := fileState(t, path)

	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	stores, err := ro.ListStores(ctx)
	if err != nil || len(stores) != 1 || stores[0].Slug != "acme" || stores[0].ProxyPort != 19400 {
		t.Errorf("ListStores = %+v, %v; want acme on 19400", stores, err)
	}
	if _, err := ro.CreateStore(ctx, Store{Name: "Other", Backend: BackendChrome}); err == nil {
		t.Error("CreateStore on a read-only database succeeded; want an error")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if after := fileState(t, path); after != before {
		t.Errorf("OpenReadOnly changed the file or its directory:\n%s\nwant\n%s", after, before)
	}
}

func TestOpenReadOnlyRefusals(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.db") // what Open creates before its first migration commits
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(dir, "foreign.db")
	raw := rawDB(t, foreign)
	mustExec(t, raw, "CREATE TABLE t (x)")
	raw.Close()
	tests := []struct {
		name, path string
		is         error
		want       string
	}{
		{"missing", filepath.Join(dir, "none.db"), fs.ErrNotExist, "no such file"},
		{"foreign", foreign, ErrForeignFile, "another application's"},
		{"not migrated yet", empty, nil, "schema version 0 and this vibe-browser reads version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, err := OpenReadOnly(tt.path)
			if err == nil {
				db.Close()
				t.Fatalf("OpenReadOnly(%q) = nil error; want %q", tt.path, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("OpenReadOnly(%q) = %v; want %v containing %q", tt.path, err, tt.is, tt.want)
			}
		})
	}
}
