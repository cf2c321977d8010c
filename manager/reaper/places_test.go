package reaper

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

// nobody is the uid of the other user the tests run daemons as.
const nobody = 65534

// spawnAs starts a fake daemon as uid (its own group too) and kills and reaps it when the test ends.
func spawnAs(t *testing.T, uid int) *child {
	t.Helper()
	cmd := exec.Command("bash", "-c", `exec -a "`+daemonArgv0+`" sleep 300`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{pid: cmd.Process.Pid, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(c.exited) }()
	t.Cleanup(func() { cmd.Process.Kill(); <-c.exited })
	testkit.WaitFor(t, 5*time.Second, "exec of the daemon", func() bool {
		data, err := os.ReadFile("/proc/" + strconv.Itoa(c.pid) + "/cmdline")
		return err == nil && strings.HasPrefix(string(data), daemonArgv0+"\x00")
	})
	return c
}

// writePid writes bu-<name>.pid naming c, and its socket, in dir.
func writePid(t *testing.T, dir, name string, c *child) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "bu-"+name+".pid"), []byte(strconv.Itoa(c.pid)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "bu-"+name+".sock"), nil, 0o600)
}

// TestPassStoreFolders: a store's own runtime folder (its agent user's, SPEC §14) is swept too; a pid file
// there proves a daemon of that folder's owner only, and one in the manager's folder a daemon of the
// manager's user only, so naming another user's process stops nothing.
func TestPassStoreFolders(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("daemons of another user need root")
	}
	dir := runtimeDir(t)
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o711)
	shop := filepath.Join(dir, "shop")
	if err := os.Mkdir(shop, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(shop, nobody, nobody)
	agents := spawnAs(t, nobody)
	rootDaemon := spawn(t, `exec -a "`+daemonArgv0+`" sleep 300`, daemonArgv0, true)
	strayAgent := spawnAs(t, nobody)
	writePid(t, shop, "shop-a1b2c3d4", agents)     // the agent's own daemon: stopped
	writePid(t, shop, "shop-0000ffff", rootDaemon) // the agent names root's: refused
	writePid(t, dir, "web-0000eeee", strayAgent)   // the manager's folder naming the agent's: refused
	if err := syscall.Mkfifo(filepath.Join(shop, "bu-shop-fifo.pid"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: dir, Slugs: func() []string { return []string{"shop"} }, Active: activeSet(), TermWait: time.Second, Log: testkit.Log(t)}
	res, err := Pass(context.Background(), cfg)
	if err != nil || !sameNames(res.Killed, []string{"shop-a1b2c3d4"}) || !sameNames(res.Removed, []string{"shop-0000ffff", "web-0000eeee"}) {
		t.Errorf("Pass = %+v, %v; want killed shop-a1b2c3d4, removed the two naming another user's process", res, err)
	}
	// A FIFO is never opened (the pass would hang there): not listed, and refused if it takes a name's place.
	if _, _, err := readStamped(filepath.Join(shop, "bu-shop-fifo.pid")); err == nil {
		t.Error("readStamped(FIFO) = nil; want it refused")
	}
	select {
	case <-agents.exited:
	case <-time.After(5 * time.Second):
		t.Error("the agent's daemon in its store's folder is still running")
	}
	if !rootDaemon.alive() || !strayAgent.alive() {
		t.Error("a daemon named by a pid file in another user's folder was stopped")
	}
}
