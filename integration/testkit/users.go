package testkit

import (
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// OtherUser is a user of this machine other than the test's own and root (nobody, daemon or bin), with its
// uid; the test is skipped on a machine with none of them.
func OtherUser(t testing.TB) (string, int) {
	t.Helper()
	for _, name := range []string{"nobody", "daemon", "bin"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		if id, _ := strconv.Atoi(u.Uid); id != os.Getuid() && id != 0 {
			return name, id
		}
	}
	t.Skip("this machine has no user nobody, daemon or bin")
	return "", 0
}

// FakeExecutable writes an executable script that exits 0 at dir/name and returns its path.
func FakeExecutable(t testing.TB, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
