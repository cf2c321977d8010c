package testkit

import (
	"os"
	"os/exec"
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
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		if err != nil && exec.Command("id", name).Run() != nil { // a parallel test may have made it meanwhile
			t.Fatalf("useradd %s: %v: %s", name, err, out)
		}
	}
	u, err := osuser.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
