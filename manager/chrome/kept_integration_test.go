//go:build integration && linux

package chrome

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/keeper"
	"vibebrowser/mux/cdpwire"
)

// launchKeptChromium launches the real Chromium on the pipe, its keeper this test binary (TestMain runs
// keeper.Main for "keep"), and stops it at cleanup.
func launchKeptChromium(t *testing.T, runDir string) *Process {
	t.Helper()
	bin, err := Find(os.Getenv("VIBE_CHROME"))
	if err != nil {
		t.Fatalf("Find: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if runDir == "" {
		runDir = t.TempDir()
	}
	p, err := Launch(context.Background(), Options{
		Binary:       bin,
		ProfileDir:   filepath.Join(t.TempDir(), "profile"),
		Headless:     true,
		NoSandbox:    os.Geteuid() == 0,
		Keeper:       []string{exe, "keep"},
		RunDir:       runDir,
		Key:          "k1",
		ReadyTimeout: 60 * time.Second,
		Log:          testkit.Log(t),
	})
	if err != nil {
		t.Fatalf("Launch(chromium on the pipe): %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("cleanup Stop: %v", err)
		}
	})
	return p
}

// getVersion asks the browser its version through its keeper's socket.
func getVersion(t *testing.T, socket string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, hello, pipe, err := cdpwire.Dial(ctx, socket)
	if err != nil {
		t.Fatalf("Dial(%s): %v", socket, err)
	}
	defer nc.Close()
	defer pipe.Close()
	br := bufio.NewReader(pipe.FromBrowser)
	pipe.FromBrowser.SetReadDeadline(time.Now().Add(10 * time.Second))
	if hello.Skip {
		if err := cdpwire.SkipRest(br); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pipe.ToBrowser.Write([]byte(`{"id":1,"method":"Browser.getVersion"}` + "\x00")); err != nil {
		t.Fatal(err)
	}
	for {
		b, _, err := cdpwire.ReadMessage(br, 1<<20)
		if err != nil {
			t.Fatalf("no answer on the pipe the keeper lent: %v", err)
		}
		if strings.HasPrefix(string(b), `{"id":1,`) {
			return string(b)
		}
	}
}

func TestKeptLaunchAdoptStop(t *testing.T) {
	run := t.TempDir()
	p := launchKeptChromium(t, run)
	socket := keeper.SocketPath(run, "k1")
	if p.Endpoint() != "unix:"+socket || p.Transport() != TransportPipe || p.KeeperPID() == 0 || p.HTTPEndpoint() != "" {
		t.Fatalf("launched on the pipe: endpoint %s, transport %s, keeper %d, http %q", p.Endpoint(), p.Transport(), p.KeeperPID(), p.HTTPEndpoint())
	}
	id, err := keeper.ReadIdentity(keeper.IdentityPath(run, "k1"))
	if err != nil || id.BrowserPID != p.PID() || id.KeeperPID != p.KeeperPID() || id.BrowserStart != p.StartTime() {
		t.Fatalf("identity %+v, %v; want browser %d started %d, keeper %d", id, err, p.PID(), p.StartTime(), p.KeeperPID())
	}
	if _, err := os.Stat(filepath.Join(p.ProfileDir(), devToolsActivePort)); err == nil {
		t.Error("a browser on the pipe wrote DevToolsActivePort")
	}
	if v := getVersion(t, socket); !strings.Contains(v, `"id":1`) || !strings.Contains(v, `"product":`) {
		t.Errorf("Browser.getVersion through the keeper = %s", v)
	}

	if _, err := AdoptKept(context.Background(), run, "k1", p.PID(), p.StartTime()+10, p.ProfileDir(), testkit.Log(t)); !errors.Is(err, ErrNotAdoptable) {
		t.Errorf("AdoptKept with a wrong start time = %v; want ErrNotAdoptable", err)
	}
	if _, err := AdoptKept(context.Background(), t.TempDir(), "k1", p.PID(), p.StartTime(), p.ProfileDir(), testkit.Log(t)); !errors.Is(err, ErrNotAdoptable) {
		t.Errorf("AdoptKept from another home's run dir = %v; want ErrNotAdoptable", err)
	}
	a, err := AdoptKept(context.Background(), run, "k1", p.PID(), p.StartTime(), p.ProfileDir(), testkit.Log(t))
	if err != nil {
		t.Fatalf("AdoptKept: %v", err)
	}
	defer a.Release()
	if !a.Adopted() || a.Endpoint() != p.Endpoint() || a.KeeperPID() != p.KeeperPID() {
		t.Errorf("adopted = {adopted %v endpoint %s keeper %d}; want the launched browser's", a.Adopted(), a.Endpoint(), a.KeeperPID())
	}
	// The adoption's check let go of the keeper: a client still gets through.
	getVersion(t, socket)

	members := groupMembers(t, p.PID())
	begin := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	t.Logf("Stop took %s; the group had %d processes", time.Since(begin), len(members))
	if left := groupMembers(t, p.PID()); len(left) > 0 {
		t.Errorf("group %d still has %v after Stop", p.PID(), left)
	}
	if p.ExitErr() != nil {
		t.Errorf("a stopped browser's keeper exited with %v; want status 0 (not a crash)", p.ExitErr())
	}
	for _, f := range []string{socket, keeper.IdentityPath(run, "k1")} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s left behind after Stop", f)
		}
	}
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Error("adopted Done() not closed after the browser stopped")
	}
}

// TestKeptKill9: kill -9 of the keeper or of Chromium ends both, as a crash.
func TestKeptKill9(t *testing.T) {
	for _, victim := range []string{"keeper", "chromium"} {
		t.Run(victim, func(t *testing.T) {
			p := launchKeptChromium(t, "")
			pid := p.PID()
			if victim == "keeper" {
				pid = p.KeeperPID()
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			select {
			case <-p.Done():
			case <-time.After(lingerBound + 5*time.Second):
				t.Fatal("Done() not closed after kill -9 of the " + victim)
			}
			testkit.WaitFor(t, 10*time.Second, "Chromium's group to be gone", func() bool { return len(groupMembers(t, p.PID())) == 0 })
			if p.ExitErr() == nil {
				t.Errorf("kill -9 of the %s reads as a clean exit; want a crash", victim)
			}
		})
	}
}

// TestKeptStopWhenHung: a frozen Chromium answers no Browser.close and no SIGTERM; its keeper SIGKILLs its
// group within its bounds.
func TestKeptStopWhenHung(t *testing.T) {
	p := launchKeptChromium(t, "")
	if err := syscall.Kill(p.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop() = %v", err)
	}
	if took, bound := time.Since(begin), closeBound+termBound+killBound+lingerBound; took > bound {
		t.Errorf("Stop of a hung browser took %s; want within %s", took, bound)
	}
	if left := groupMembers(t, p.PID()); len(left) > 0 {
		t.Errorf("group %d still has %v after Stop", p.PID(), left)
	}
}

// TestStopStray: a keeper nobody adopted is stopped with its browser; a gone keeper's files are removed.
func TestStopStray(t *testing.T) {
	run := t.TempDir()
	p := launchKeptChromium(t, run)
	stopped, err := StopStray(context.Background(), run, "k1", testkit.Log(t))
	if err != nil || !stopped {
		t.Fatalf("StopStray = %v, %v; want the keeper stopped", stopped, err)
	}
	select {
	case <-p.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the stray keeper's browser is still running")
	}
	os.WriteFile(keeper.IdentityPath(run, "gone"), []byte(`{"format":1,"keeper_pid":999999999}`), 0o600)
	if stopped, err := StopStray(context.Background(), run, "gone", testkit.Log(t)); stopped || err != nil {
		t.Errorf("StopStray of a gone keeper = %v, %v; want nothing stopped", stopped, err)
	}
	if _, err := os.Stat(keeper.IdentityPath(run, "gone")); err == nil {
		t.Error("a gone keeper's identity file was left")
	}
}
