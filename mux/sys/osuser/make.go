package osuser

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"time"
)

// Making users. The manager makes a store's browser user (SPEC §20) the way an operator would, with
// useradd --system. Makes are serialized in this process; a lock of the user database that another
// process holds (an operator's useradd, a test's) makes useradd give up after its own wait, and that is
// waited out and tried again, never taken for success.

// makeMu serializes this process's makes: two useradds at once contend for /etc/passwd's lock.
var makeMu sync.Mutex

// MakeWait bounds how long Make keeps trying while other processes hold the user database's lock.
const MakeWait = 2 * time.Minute

// useradd's exit statuses that mean "the user database was locked or could not be written": try again.
const (
	useraddPasswdBusy = 1  // E_PW_UPDATE: "cannot lock /etc/passwd; try again later"
	useraddGroupBusy  = 10 // E_GRP_UPDATE: the same of /etc/group
)

// Make looks up the user called name, making it first when there is none: a system user with no home and
// no login shell (useradd --system --no-create-home --shell /usr/sbin/nologin). An existing user of that name
// is used as it is. Making one needs root.
func Make(name string) (*User, error) {
	if u, err := Lookup(name); err == nil {
		return u, nil
	}
	makeMu.Lock()
	defer makeMu.Unlock()
	useradd, err := useraddPath()
	if err != nil {
		return nil, fmt.Errorf("make user %s: %w", name, err)
	}
	deadline := time.Now().Add(MakeWait)
	for pause := 250 * time.Millisecond; ; pause = min(2*pause, 5*time.Second) {
		out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
		u, lerr := Lookup(name) // made now, or meanwhile by another process (useradd then says the name is taken)
		if lerr == nil {
			return u, nil
		}
		if err == nil {
			return nil, fmt.Errorf("make user %s: useradd made no user of that name: %w", name, lerr)
		}
		var exit *exec.ExitError
		busy := errors.As(err, &exit) && (exit.ExitCode() == useraddPasswdBusy || exit.ExitCode() == useraddGroupBusy)
		if !busy || time.Now().Add(pause).After(deadline) {
			return nil, fmt.Errorf("make user %s (%s --system): %w: %s", name, useradd, err, bytes.TrimSpace(out))
		}
		time.Sleep(pause)
	}
}

// useraddPath finds useradd: on PATH, else where Linux distributions keep it (a service's PATH may lack
// the sbin folders).
func useraddPath() (string, error) {
	if p, err := exec.LookPath("useradd"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/useradd", "/sbin/useradd"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errors.New("no useradd on PATH, /usr/sbin or /sbin: make the user by hand, or name one of your own")
}
