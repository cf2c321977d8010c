package keeper

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestReadOnlyRegularFiles: the manager reads a keeper's files, which a browser user may own, never through
// a symlink and never from a FIFO (it would hang there).
func TestReadOnlyRegularFiles(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(outside, []byte(`{"format":2,"keeper_pid":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(IdentityPath(dir, "file"), []byte(`{"format":2,"key":"file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, IdentityPath(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(IdentityPath(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key     string
		wantErr bool
	}{{"file", false}, {"link", true}, {"fifo", true}, {"missing", true}}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			id, err := ReadIdentity(IdentityPath(dir, tt.key))
			if (err != nil) != tt.wantErr {
				t.Errorf("ReadIdentity(%s) = %+v, %v; want error %v", tt.key, id, err, tt.wantErr)
			}
			if f, err := OpenLog(IdentityPath(dir, tt.key)); (err != nil) != tt.wantErr {
				t.Errorf("OpenLog(%s) = %v; want error %v", tt.key, err, tt.wantErr)
			} else if err == nil {
				f.Close()
			}
		})
	}
	if st, err := ReadForwardStatus(ForwardStatusPath(dir, "none")); err != nil || st.Error != "" {
		t.Errorf("ReadForwardStatus of no file = %+v, %v; want no failure", st, err)
	}
	if err := syscall.Mkfifo(ForwardStatusPath(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadForwardStatus(ForwardStatusPath(dir, "fifo")); err == nil {
		t.Error("ReadForwardStatus of a FIFO succeeded; want it refused")
	}
}
