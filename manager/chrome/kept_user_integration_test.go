//go:build integration && linux

package chrome

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/keeper"
	"vibebrowser/mux/sys/osuser"
	"vibebrowser/mux/sys/procid"
)

// testBrowserUser is the unprivileged user the browser-user tests run Chromium as.
const testBrowserUser = "vbtest-browser"

// browserUser returns testBrowserUser, creating it when it is missing; the test is skipped unless it runs as
// root (only root starts processes as another user).
func browserUser(t *testing.T) *osuser.User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running the browser as its own user needs root")
	}
	if exec.Command("id", testBrowserUser).Run() != nil {
		out, err := exec.Command("useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", testBrowserUser).CombinedOutput()
		if err != nil && exec.Command("id", testBrowserUser).Run() != nil { // another test may have made it meanwhile
			t.Fatalf("useradd %s: %v: %s", testBrowserUser, err, out)
		}
	}
	u, err := osuser.Lookup(testBrowserUser)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// reachableDir is a fresh folder every user may enter (t.TempDir's are root's 0700), removed at cleanup.
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "vbtest-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// copyExe copies this test binary (the keeper, for "keep") into dir, readable and runnable by every user:
// the one go test built sits in a folder of root's.
func copyExe(t *testing.T, dir string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(bin, "chrome.test")
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// procUIDs is the real, effective, saved and filesystem uid of pid, from /proc/<pid>/status.
func procUIDs(t *testing.T, pid int) []int {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "Uid:"); ok {
			var ids []int
			for _, s := range strings.Fields(rest) {
				n, _ := strconv.Atoi(s)
				ids = append(ids, n)
			}
			return ids
		}
	}
	t.Fatalf("pid %d: no Uid line in its status", pid)
	return nil
}

// procFile reads /proc/<pid>/<name> as NUL-separated fields.
func procFile(t *testing.T, pid int, name string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/" + name)
	if err != nil {
		t.Fatalf("pid %d: %v", pid, err)
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

// ownedBy fails unless path is uid's with mode perm.
func ownedBy(t *testing.T, path string, uid int, perm os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	st := fi.Sys().(*syscall.Stat_t)
	if int(st.Uid) != uid || fi.Mode().Perm() != perm {
		t.Errorf("%s is uid %d, mode %04o; want uid %d, mode %04o", path, st.Uid, fi.Mode().Perm(), uid, perm)
	}
}

// freePort is a loopback port free at the moment.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestKeptAsBrowserUser: a browser launched on the pipe as its browser user (SPEC §14) runs, keeper and
// Chromium both, as that user with Chromium's sandbox on; it answers through its keeper, whose files are in
// a folder of that user's, as its profile is; its forwarder serves that user's sockets only; it is adopted
// and stopped as any other.
func TestKeptAsBrowserUser(t *testing.T) {
	u := browserUser(t)
	bin, err := Find(os.Getenv("VIBE_CHROME"))
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	base := reachableDir(t)
	exe := copyExe(t, base)
	for _, d := range []string{"run", "profiles"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o711); err != nil {
			t.Fatal(err)
		}
	}
	run := filepath.Join(base, "run", u.Name)
	profile := filepath.Join(base, "profiles", "store")
	// A profile a former user left behind, root's here: the launch gives every file in it to the browser user.
	if err := os.MkdirAll(filepath.Join(profile, "Default"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(profile, "Default", "Bookmarks"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	fwdPort := freePort(t)
	p, err := Launch(context.Background(), Options{
		Identity:     Identity{Proxy: "http://127.0.0.1:9", ForwardPort: fwdPort, Store: "store"},
		Binary:       bin,
		ProfileDir:   profile,
		Headless:     true,
		User:         u,
		Keeper:       []string{exe, "keep"},
		RunDir:       run,
		Key:          "k1",
		ReadyTimeout: 60 * time.Second,
		Log:          testkit.Log(t),
	})
	if err != nil {
		t.Fatalf("Launch(as %s): %v", u.Name, err)
	}
	t.Cleanup(func() { p.Stop(context.Background()) })

	for _, proc := range []struct {
		what string
		pid  int
	}{{"keeper", p.KeeperPID()}, {"chromium", p.PID()}} {
		if ids := procUIDs(t, proc.pid); slices.ContainsFunc(ids, func(id int) bool { return id != u.UID }) {
			t.Errorf("the %s (pid %d) runs as uids %v; want %d (%s) only", proc.what, proc.pid, ids, u.UID, u.Name)
		}
	}
	cmdline := procFile(t, p.PID(), "cmdline")
	if slices.Contains(cmdline, "--no-sandbox") {
		t.Errorf("chromium as %s runs with --no-sandbox: %v", u.Name, cmdline)
	}
	if env := procFile(t, p.PID(), "environ"); !slices.Contains(env, "HOME="+filepath.Join(profile, homeName)) {
		t.Errorf("chromium's environment has no HOME in its profile: %v", env)
	}
	// The sandbox at work: Chromium's renderers and utilities run in a user namespace of their own.
	self, _ := os.Readlink("/proc/self/ns/user")
	testkit.WaitFor(t, 20*time.Second, "a sandboxed chromium process (its own user namespace)", func() bool {
		for _, pid := range groupMembers(t, p.PID()) {
			if ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/user"); err == nil && ns != self {
				return true
			}
		}
		return false
	})

	socket := keeper.SocketPath(run, "k1")
	if v := getVersion(t, socket); !strings.Contains(v, `"product":`) {
		t.Errorf("Browser.getVersion through the keeper = %s", v)
	}
	ownedBy(t, run, u.UID, 0o700)
	for _, f := range []string{socket, keeper.IdentityPath(run, "k1"), keeper.LogPath(run, "k1")} {
		ownedBy(t, f, u.UID, 0o600)
	}
	ownedBy(t, profile, u.UID, 0o700)
	ownedBy(t, filepath.Join(profile, "Default", "Preferences"), u.UID, 0o600)
	ownedBy(t, filepath.Join(profile, "Default", "Bookmarks"), u.UID, 0o644)
	ownedBy(t, filepath.Join(profile, homeName), u.UID, 0o700)

	// The forwarder runs in the keeper, as the browser user: it serves that user's sockets, not root's.
	nc, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", fwdPort), 5*time.Second)
	if err != nil {
		t.Fatalf("the forwarder: %v", err)
	}
	fmt.Fprintf(nc, "GET http://example.test/ HTTP/1.1\r\nHost: example.test\r\n\r\n")
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if b, _ := io.ReadAll(nc); len(b) > 0 {
		t.Errorf("the browser user's forwarder answered root: %q", b)
	}
	nc.Close()

	a, err := AdoptKept(context.Background(), run, "k1", p.PID(), p.StartTime(), profile, testkit.Log(t))
	if err != nil {
		t.Fatalf("AdoptKept: %v", err)
	}
	if a.KeeperPID() != p.KeeperPID() || a.Endpoint() != p.Endpoint() {
		t.Errorf("adopted keeper %d at %s; want %d at %s", a.KeeperPID(), a.Endpoint(), p.KeeperPID(), p.Endpoint())
	}
	// Through the adopted handle, as a restarted manager would: the root manager signals and reaps the
	// browser user's processes.
	if err := a.Stop(context.Background()); err != nil {
		t.Fatalf("Stop of the adopted browser = %v", err)
	}
	if left := groupMembers(t, p.PID()); len(left) > 0 { // zombies count as gone
		t.Errorf("group %d still has %v after Stop", p.PID(), left)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Error("the launched handle's Done() not closed after its keeper stopped")
	}
	for _, f := range []string{socket, keeper.IdentityPath(run, "k1")} {
		if _, err := os.Lstat(f); err == nil {
			t.Errorf("%s left behind after Stop", f)
		}
	}
}

// TestKeptIdentityForged: a keeper's identity file is its user's to write; one that names a process of
// another user (here the test itself, root) is neither adopted nor signalled as a stray.
func TestKeptIdentityForged(t *testing.T) {
	u := browserUser(t)
	base := reachableDir(t)
	run := filepath.Join(base, "run")
	if err := ownDir(run, owner{u.UID, u.GID}); err != nil {
		t.Fatal(err)
	}
	holder := startHolder(t, "--user-data-dir="+filepath.Join(base, "profile"))
	pid := holder.Process.Pid
	pi, err := procid.Inspect(context.Background(), pid)
	if err != nil {
		t.Fatal(err)
	}
	info := pi.Start
	forged := fmt.Sprintf(`{"format":%d,"key":"k","socket":%q,"profile":%q,"keeper_pid":%d,"keeper_start":%d,"browser_pid":%d,"browser_start":%d,"browser_pgid":%d}`,
		keeper.Format, keeper.SocketPath(run, "k"), filepath.Join(base, "profile"), pid, info, pid, info, pid)
	if err := os.WriteFile(keeper.IdentityPath(run, "k"), []byte(forged), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = AdoptKept(context.Background(), run, "k", pid, info, filepath.Join(base, "profile"), testkit.Log(t))
	if !errors.Is(err, ErrNotAdoptable) || !strings.Contains(err.Error(), "runs as uid 0") {
		t.Errorf("AdoptKept of an identity naming root's process = %v; want ErrNotAdoptable for its uid", err)
	}
	stopped, err := StopStray(context.Background(), run, "k", testkit.Log(t))
	if stopped || err == nil || !strings.Contains(err.Error(), "runs as uid 0") {
		t.Errorf("StopStray of an identity naming root's process = %v, %v; want it refused for its uid", stopped, err)
	}
	if !isLive(pid) {
		t.Error("the process a forged identity named was signalled")
	}
}
