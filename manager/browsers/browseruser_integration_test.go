//go:build integration && linux

package browsers

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/chrome"
	"vibebrowser/mux/sys/osuser"
)

// testBrowserUser is the unprivileged user these tests run Chromium as (the chrome package's tests use it too).
const testBrowserUser = "vbtest-browser"

// browserUserForTest returns testBrowserUser, creating it when missing; the test is skipped unless it runs
// as root.
func browserUserForTest(t *testing.T) *osuser.User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a browser as its own user needs root")
	}
	if exec.Command("id", testBrowserUser).Run() != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", testBrowserUser).CombinedOutput()
		if err != nil && exec.Command("id", testBrowserUser).Run() != nil {
			t.Fatalf("useradd %s: %v: %s", testBrowserUser, err, out)
		}
	}
	u, err := osuser.Lookup(testBrowserUser)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// reachableCopy is a folder every user may enter holding a copy of this test binary (the keeper, for
// "keep"), and a home in it; the binary go test built sits in a folder of root's.
func reachableCopy(t *testing.T) (home, exe string) {
	t.Helper()
	base, err := os.MkdirTemp("", "vbtest-fleet-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o711)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	exe = filepath.Join(base, "browsers.test")
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	home = filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	return home, exe
}

// statusUID is the real uid of pid.
func statusUID(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			n, _ := strconv.Atoi(strings.Fields(rest)[0])
			return n
		}
	}
	t.Fatalf("pid %d: no Uid line", pid)
	return -1
}

// TestBrowserUserLaunchAndAdopt: a store with a browser user gets its Chromium and keeper as that user,
// the keeper's files in run/keepers/<user>/; a restarted manager adopts it there even though the store's
// setting no longer names the user, and stops it.
func TestBrowserUserLaunchAndAdopt(t *testing.T) {
	u := browserUserForTest(t)
	bin, err := chrome.Find("")
	if err != nil {
		t.Fatalf("the integration tests need Chromium (go tool task deps): %v", err)
	}
	home, exe := reachableCopy(t)
	headless := true
	f, _ := fakeFleet(t, func(c *Config) {
		c.Home, c.Chrome, c.Headless, c.Keeper = home, bin, &headless, []string{exe, "keep"}
	})
	f.backends = newBackends(&f.cfg, f.db, f.root) // the real Chromium
	sp := fakeStore(t, f, "Bounded")
	sp.Opts.BrowserUser = u.Name // this start's setting only: state keeps none
	in, err := f.Ensure(context.Background(), sp)
	if err != nil {
		t.Fatalf("Ensure as %s: %v", u.Name, err)
	}
	want := filepath.Join(home, "run", "keepers", u.Name)
	if in.KeeperDir() != want {
		t.Errorf("KeeperDir() = %q; want %q", in.KeeperDir(), want)
	}
	for what, pid := range map[string]int{"chromium": in.PID(), "keeper": in.KeeperPID()} {
		if uid := statusUID(t, pid); uid != u.UID {
			t.Errorf("the %s runs as uid %d; want %d (%s)", what, uid, u.UID, u.Name)
		}
	}
	for path, mode := range map[string]os.FileMode{"run": 0o711, "run/keepers": 0o711, "profiles": 0o711,
		"downloads/" + sp.Slug: 0o711, "run/keepers/" + u.Name: 0o700, "profiles/" + sp.Slug: 0o700} {
		if fi, err := os.Stat(filepath.Join(home, path)); err != nil || fi.Mode().Perm() != mode {
			t.Errorf("%s: %v, %v; want mode %04o", path, fi.Mode().Perm(), err, mode)
		}
	}

	// The manager restarts, leaving the browser running; the next one reads the store from state, where it
	// has no browser user, and still finds the keeper where the record says.
	pid := in.PID()
	f.Quit(true)
	ctx, cancel := context.WithCancel(context.Background())
	f2 := New(ctx, f.cfg, f.db, testkit.Log(t), Hooks{})
	t.Cleanup(func() {
		f2.Quit(false)
		cancel()
		f2.wg.Wait()
	})
	if err := f2.Boot(context.Background()); err != nil {
		t.Fatalf("Boot: %v", err)
	}
	adopted := f2.Current(sp.Key)
	if adopted == nil || adopted.PID() != pid || adopted.KeeperDir() != want {
		t.Fatalf("after the restart: %+v; want pid %d adopted from %s", adopted, pid, want)
	}
	if err := f2.Stop(context.Background(), sp.Key); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	testkit.WaitFor(t, 10*time.Second, "chromium to be gone", func() bool {
		_, err := os.Stat("/proc/" + strconv.Itoa(pid))
		if err != nil {
			return true
		}
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		return strings.Contains(string(b), ") Z ") // a zombie whose parent died is gone
	})
}
