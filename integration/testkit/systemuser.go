package testkit

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"vibebrowser/osuser"
)

// SystemUser makes (once per machine, idempotently) and looks up an unprivileged system user, as the store
// boundary's tests need real OS users (SPEC §14). It skips the test where it does not run as root.
func SystemUser(t testing.TB, name string) *osuser.User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the store boundary's tests make OS users: run them as root (CI does)")
	}
	if exec.Command("id", name).Run() != nil {
		// Test packages run in parallel, and two useradds at once fail on /etc/passwd's lock ("try again
		// later"): one at a time, through a lock file every test process shares.
		lock, err := os.OpenFile(filepath.Join(os.TempDir(), "vbtest-useradd.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		if exec.Command("id", name).Run() != nil { // another process may have made it meanwhile
			out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
			if err != nil {
				t.Fatalf("useradd %s: %v: %s", name, err, out)
			}
		}
	}
	u, err := osuser.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
