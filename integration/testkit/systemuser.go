package testkit

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"vibebrowser/mux/sys/osuser"
)

// SystemUser makes (once per machine, idempotently) and looks up an unprivileged system user, as the store
// boundary's tests need real OS users (SPEC §14). It skips the test where it does not run as root.
func SystemUser(t testing.TB, name string) *osuser.User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the store boundary's tests make OS users: run them as root (CI does)")
	}
	if _, err := osuser.Lookup(name); err != nil {
		// Test packages run in parallel: one test process at a time makes users, through a lock file every
		// test process shares; osuser.Make waits out anyone else's lock of /etc/passwd (a manager making a
		// store's browser user) and takes a user made meanwhile.
		lock, err := os.OpenFile(filepath.Join(os.TempDir(), "vbtest-useradd.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
	}
	u, err := osuser.Make(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
