//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// browserOf returns the status line of the browser with this slug.
func (m *managed) browserOf(slug string) api.Browser {
	m.t.Helper()
	st, err := m.client.Status(context.Background())
	if err != nil {
		m.t.Fatal(err)
	}
	for _, b := range st.Browsers {
		if b.Slug == slug {
			return b
		}
	}
	m.t.Fatalf("no browser %s in the status", slug)
	return api.Browser{}
}

func (m *managed) running(slug string) bool { return m.browserOf(slug).Status == api.StatusRunning }

func (m *managed) storeWS(ref, client string) string {
	m.t.Helper()
	s, err := m.client.GetStore(context.Background(), ref)
	if err != nil {
		m.t.Fatal(err)
	}
	return s.CDPWS + "/client-" + client
}

func TestIdleSweep(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=2")
	for _, name := range []string{"idle", "held", "client", "busy"} {
		m.cli("store", "add", name)
	}
	// Each holder is in place right after its store's ensure, before a sweep could find the browser idle.
	m.cli("task", "set", taskA, "--store", "held", "--status", "running")
	ensure := func(name string) {
		if err := ensureStore(m, name); err != nil {
			t.Fatal(err)
		}
	}
	ensure("held")
	ensure("client")
	c := dialRaw(t, m.storeWS("client", "keeper"))
	c.createPage("about:blank")
	ensure("busy")
	var stopBusy sync.WaitGroup
	busyCtx, cancelBusy := context.WithCancel(context.Background())
	stopBusy.Go(func() { // activity without a connected client: short visits every 500 ms
		for busyCtx.Err() == nil {
			v := dialRaw(t, m.storeWS("busy", "visitor"))
			v.targetIDs(false)
			v.ws.Close()
			select {
			case <-busyCtx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	})
	ensure("idle")

	testkit.WaitFor(t, 15*time.Second, "the idle browser to be stopped", func() bool { return !m.running("idle") })
	if !m.running("held") || !m.running("client") || !m.running("busy") {
		t.Errorf("after the idle stop: held %v, client %v, busy %v; want all running",
			m.running("held"), m.running("client"), m.running("busy"))
	}
	// Still held two sweeps later.
	time.Sleep(3 * time.Second)
	if !m.running("held") || !m.running("client") || !m.running("busy") {
		t.Errorf("3s later: held %v, client %v, busy %v; want all running", m.running("held"), m.running("client"), m.running("busy"))
	}
	// waiting does not hold; a closed client and ended activity release theirs.
	var waiting api.Task
	json.Unmarshal([]byte(m.cli("task", "set", taskA, "--status", "waiting", "--json")), &waiting)
	if waiting.Store == "" || waiting.Status != "waiting" {
		t.Errorf("task set without --store = %+v; want the task's store kept", waiting)
	}
	c.ws.Close()
	cancelBusy()
	stopBusy.Wait()
	for _, slug := range []string{"held", "client", "busy"} {
		testkit.WaitFor(t, 15*time.Second, slug+" to be stopped once released", func() bool { return !m.running(slug) })
	}
	// An idle stop keeps the wrapper: the next call restarts the browser.
	out := m.mustAgent("--store idle --task "+taskB, "browser-use <<'PY'\neval 1+1\nPY")
	if strings.TrimSpace(out) != "2" {
		t.Errorf("call after an idle stop printed %q; want 2", out)
	}
}

func TestIdleSweepNeverCutsOffAnEnsure(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=1") // a sweep every 500 ms
	m.cli("store", "add", "racy")
	for i := range 8 {
		out, err := m.agent("--store racy --task "+taskA, "browser-use <<'PY'\nsleep 300ms\neval 40+2\nPY")
		if err != nil || strings.TrimSpace(out) != "42" {
			t.Fatalf("call %d racing the sweep: %q, %v", i, out, err)
		}
		time.Sleep(1200 * time.Millisecond) // long enough for the browser to go idle and be swept
	}
}

func TestIdleSweepDisabled(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	m.cli("store", "add", "forever")
	if err := ensureStore(m, "forever"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // several sweeps' worth, had one been running
	if !m.running("forever") {
		t.Error("VIBE_BROWSER_IDLE_S=0 stopped a browser")
	}
}

func TestRestartAdoptsLiveBrowsers(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	web := site(t)
	m.cli("store", "add", "one")
	m.cli("store", "add", "two")
	m.mustAgent("--store one --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/one-a\nPY")
	m.mustAgent("--store two --task "+taskB, "browser-use <<'PY'\nopen "+web.URL+"/two-b\nPY")
	live := dialRaw(t, m.storeWS("one", "live-client"))
	liveTarget, _ := live.createPage(web.URL + "/one-live")
	pids := map[string]int{"one": m.browserOf("one").PID, "two": m.browserOf("two").PID}

	// kill -9: no quit barrier, browsers keep running, the socket and lock are left behind.
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.cmd.Wait()
	m.start()
	for slug, pid := range pids {
		if b := m.browserOf(slug); b.Status != api.StatusRunning || b.PID != pid {
			t.Errorf("after restart %s is %s with pid %d; want the same Chromium %d adopted", slug, b.Status, b.PID, pid)
		}
	}
	// Each client id still sees exactly its tabs after reconnecting.
	again := dialRaw(t, m.storeWS("one", "live-client"))
	if got := again.targetIDs(false); !slices.Equal(got, []string{liveTarget}) {
		t.Errorf("reconnected client sees %v; want exactly its tab %s", got, liveTarget)
	}
	out := m.mustAgent("--store one --task "+taskA, "browser-use <<'PY'\ntargets\nPY")
	if !strings.Contains(out, "/one-a") || strings.Contains(out, "/one-live") || strings.Contains(out, "/two-b") {
		t.Errorf("task A after the restart sees %q; want its /one-a only", out)
	}
	out = m.mustAgent("--store two --task "+taskB, "browser-use <<'PY'\ntargets\nPY")
	if !strings.Contains(out, "/two-b") {
		t.Errorf("task B after the restart sees %q; want its /two-b", out)
	}
	if b := m.browserOf("one"); b.PID != pids["one"] {
		t.Errorf("a call after the restart relaunched store one (pid %d → %d)", pids["one"], b.PID)
	}
}

func TestKeepBrowsersOnExitThenAdopt(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_KEEP_BROWSERS_ON_EXIT=1", "VIBE_BROWSER_IDLE_S=0")
	m.cli("store", "add", "kept")
	if err := ensureStore(m, "kept"); err != nil {
		t.Fatal(err)
	}
	pid := m.browserOf("kept").PID
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL) }) // its process group, whatever the manager left
	if err := m.stop(); err != nil {
		t.Fatalf("exit with VIBE_KEEP_BROWSERS_ON_EXIT=1: %v", err)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Fatal("the browser did not survive a quit with VIBE_KEEP_BROWSERS_ON_EXIT=1")
	}
	m.start()
	if b := m.browserOf("kept"); b.PID != pid || b.Status != api.StatusRunning {
		t.Errorf("after restart: %+v; want pid %d adopted", b, pid)
	}
}

func TestQuitBarrierIsBounded(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "frozen")
	if err := ensureStore(m, "frozen"); err != nil {
		t.Fatal(err)
	}
	pid := m.browserOf("frozen").PID
	// A stopped process answers nothing: Browser.close hangs, SIGTERM is not acted on.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	m.cmd.Process.Signal(syscall.SIGTERM)
	// While the barrier waits on the frozen browser, new work is refused with 503.
	testkit.WaitFor(t, 5*time.Second, "ensure to answer 503 during the quit barrier", func() bool {
		return api.IsCode(ensureStore(m, "frozen"), api.CodeShuttingDown)
	})
	if err := m.cmd.Wait(); err != nil {
		t.Errorf("exit status after the barrier: %v; want 0", err)
	}
	if took := time.Since(began); took > 25*time.Second {
		t.Errorf("quit took %v; want it within the 20s barrier", took)
	}
	testkit.WaitFor(t, 10*time.Second, "the frozen browser's group to be gone", func() bool {
		return syscall.Kill(-pid, 0) != nil || isZombieGroup(pid)
	})
}

// isZombieGroup reports whether the only members left of a process group are zombies (this machine's init
// does not reap orphans).
func isZombieGroup(pgid int) bool {
	out, err := exec.Command("ps", "-o", "stat=", "-g", strconv.Itoa(pgid)).Output()
	if err != nil {
		return true // ps exits 1 when the group has no process at all
	}
	for _, st := range strings.Fields(string(out)) {
		if !strings.HasPrefix(st, "Z") {
			return false
		}
	}
	return true
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "stuck")
	if err := ensureStore(m, "stuck"); err != nil {
		t.Fatal(err)
	}
	pid := m.browserOf("stuck").PID
	syscall.Kill(pid, syscall.SIGSTOP)
	t.Cleanup(func() { syscall.Kill(-pid, syscall.SIGKILL); syscall.Kill(pid, syscall.SIGKILL) })
	m.cmd.Process.Signal(syscall.SIGTERM)
	testkit.WaitFor(t, 5*time.Second, "the quit barrier to begin (503)", func() bool {
		return api.IsCode(ensureStore(m, "stuck"), api.CodeShuttingDown)
	})
	began := time.Now()
	m.cmd.Process.Signal(syscall.SIGTERM)
	err := m.cmd.Wait()
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("second signal took %v to end the manager; want at once", took)
	}
	if err == nil {
		t.Error("a second signal exited 0; want a non-zero exit that says the barrier was cut short")
	}
}

// daemonPID reads the pid file the fake CLI's daemon wrote for a session.
func (m *managed) daemonPID(buName string) int {
	m.t.Helper()
	data, err := os.ReadFile(filepath.Join(m.home, "r", "bu-"+buName+".pid"))
	if err != nil {
		m.t.Fatalf("no daemon for %s: %v", buName, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		m.t.Fatal(err)
	}
	m.t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// gone reports whether pid has exited (a zombie counts: this machine's init does not reap orphans).
func gone(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(fields) > 0 && fields[0] == "Z"
}

func TestReaperStopsDaemonsOfEndedTasks(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	m.env = append(m.env, "FAKEBU_DAEMON=1")
	m.cli("store", "add", "shop")
	var cjk api.Store
	if err := json.Unmarshal([]byte(m.cli("store", "add", "アクメ商店", "--json")), &cjk); err != nil {
		t.Fatal(err)
	}
	call := func(envArgs string, flags string) {
		m.mustAgent(envArgs, "browser-use "+flags+" <<'PY'\neval 1\nPY")
	}
	call("--store shop --task "+taskA, "")
	call("--store shop --task "+taskA, "--worker 1")
	call("--store shop", "")
	call("--store shop", "--session shop-aux")
	call("--store "+cjk.Slug+" --task "+taskB, "")
	call("--store "+cjk.Slug, "")
	pids := map[string]int{}
	for _, name := range []string{"shop-a1a1a1a1", "shop-a1a1a1a1-w1", "shop", "shop-aux", cjk.Slug + "-b2b2b2b2", cjk.Slug} {
		pids[name] = m.daemonPID(name)
	}
	// A task that completes has its daemons (main and worker slots) stopped at once.
	m.cli("task", "set", taskA, "--status", "completed")
	for _, name := range []string{"shop-a1a1a1a1", "shop-a1a1a1a1-w1"} {
		testkit.WaitFor(t, 10*time.Second, name+"'s daemon to stop", func() bool { return gone(pids[name]) })
		if _, err := os.Stat(filepath.Join(m.home, "r", "bu-"+name+".pid")); !os.IsNotExist(err) {
			t.Errorf("pid file of %s left behind (%v)", name, err)
		}
	}
	// waiting keeps daemons; a pass spares them, and the task-less sessions, CJK slug included.
	m.cli("task", "set", taskB, "--status", "waiting")
	m.cli("reap")
	for _, name := range []string{"shop", "shop-aux", cjk.Slug + "-b2b2b2b2", cjk.Slug} {
		if gone(pids[name]) {
			t.Errorf("daemon %s was stopped; want it kept", name)
		}
	}
	// A deleted task's daemons go at once too.
	m.cli("task", "rm", taskB)
	testkit.WaitFor(t, 10*time.Second, "the deleted task's daemon to stop", func() bool { return gone(pids[cjk.Slug+"-b2b2b2b2"]) })
	if gone(pids[cjk.Slug]) {
		t.Errorf("the CJK store's own session %s was taken for a task daemon", cjk.Slug)
	}
}

func TestReaperKillSwitch(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_DISABLE_DAEMON_SWEEP=1", "VIBE_BROWSER_IDLE_S=0")
	m.env = append(m.env, "FAKEBU_DAEMON=1")
	m.cli("store", "add", "shop")
	m.mustAgent("--store shop --task "+taskA, "browser-use <<'PY'\neval 1\nPY")
	pid := m.daemonPID("shop-a1a1a1a1")
	m.cli("task", "set", taskA, "--status", "failed")
	m.cli("reap")
	if gone(pid) {
		t.Error("VIBE_DISABLE_DAEMON_SWEEP=1 did not keep the daemon of an ended task")
	}
}

func TestClosedBrowserIsBuriedAndRelaunched(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	m.cli("store", "add", "closer")
	if err := ensureStore(m, "closer"); err != nil {
		t.Fatal(err)
	}
	before := m.browserOf("closer")
	// What a user closing the window does: Chromium exits cleanly (SIGTERM is its clean shutdown, exit 0,
	// past the mux, which would refuse a Browser.close). That is not a crash, so it stays closed.
	if err := syscall.Kill(before.PID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The death is noticed without any call: the status shows it stopped and its port is free again.
	testkit.WaitFor(t, 15*time.Second, "the closed browser to show as stopped", func() bool { return !m.running("closer") })
	out := m.mustAgent("--store closer --task "+taskA, "browser-use <<'PY'\neval 6*7\nPY")
	if strings.TrimSpace(out) != "42" {
		t.Errorf("call after the close printed %q; want 42", out)
	}
	after := m.browserOf("closer")
	if after.PID == before.PID || after.Status != api.StatusRunning || after.ProxyPort != before.ProxyPort {
		t.Errorf("after the relaunch %+v; want a new pid on the same registry port %d", after, before.ProxyPort)
	}
}

func TestCrashedBrowserComesBackWithItsTabs(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0", "VIBE_BROWSER_RELAUNCH_MAX=1")
	m.cli("store", "add", "crashy")
	if err := ensureStore(m, "crashy"); err != nil {
		t.Fatal(err)
	}
	before := m.browserOf("crashy")
	site := muxSite(t)
	clients := map[string]*rawCDP{"task-a": dialRaw(t, m.storeWS("crashy", "task-a")),
		"task-b": dialRaw(t, m.storeWS("crashy", "task-b"))}
	for name, c := range clients {
		_, s := c.createPage(site.URL + "/" + name)
		testkit.WaitFor(t, 10*time.Second, name+"'s page loaded", func() bool {
			v, err := c.evaluate(s, "document.title")
			return err == nil && string(v) == `"page /`+name+`"`
		})
	}
	profile := filepath.Join(m.home, "profiles", "crashy")
	waitSessionSaved(t, profile, "/task-a", "/task-b")

	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the crashed browser relaunched", func() bool {
		b := m.browserOf("crashy")
		return b.Status == api.StatusRunning && b.PID != before.PID && b.PID != 0
	})
	if after := m.browserOf("crashy"); after.ProxyPort != before.ProxyPort {
		t.Errorf("relaunched on port %d; want the same mux port %d", after.ProxyPort, before.ProxyPort)
	}
	// The clients kept their connections, and each has exactly its own tab back, showing its page.
	for name, c := range clients {
		testkit.WaitFor(t, 20*time.Second, name+"'s restored tab back with its owner", func() bool {
			return len(c.targetIDs(false)) == 1
		})
		var at struct{ SessionID string }
		c.must("Target.attachToTarget", map[string]any{"targetId": c.targetIDs(false)[0], "flatten": true}, "", &at)
		testkit.WaitFor(t, 15*time.Second, name+"'s restored tab shows its page", func() bool {
			v, err := c.evaluate(at.SessionID, `document.readyState === "complete" && location.pathname`)
			return err == nil && string(v) == `"/`+name+`"`
		})
	}

	// A second crash within the window is over VIBE_BROWSER_RELAUNCH_MAX=1: the browser stays down and
	// the next ensure says why.
	if err := syscall.Kill(m.browserOf("crashy").PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the browser over budget to stay stopped", func() bool { return !m.running("crashy") })
	if err := ensureStore(m, "crashy"); !api.IsCode(err, api.CodeRelaunchBudget) {
		t.Errorf("ensure after the budget is spent: %v; want %s", err, api.CodeRelaunchBudget)
	}
}

func TestExpiredLeaseStopsDaemons(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_TASK_LEASE_S=3", "VIBE_BROWSER_IDLE_S=0")
	m.env = append(m.env, "FAKEBU_DAEMON=1")
	m.cli("store", "add", "shop")
	if err := ensureStore(m, "shop"); err != nil { // so the call below is quicker than the lease
		t.Fatal(err)
	}
	// The fake notes each daemon it starts: the pid file itself may be gone by the time the test reads it, when
	// the call took longer than the 3 s lease on a loaded machine.
	started := filepath.Join(t.TempDir(), "daemons")
	m.env = append(m.env, "FAKEBU_DAEMON_LOG="+started)
	m.mustAgent("--store shop --task "+taskA, "browser-use <<'PY'\neval 1\nPY")
	log, err := os.ReadFile(started)
	var pid int
	if _, serr := fmt.Sscanf(string(log), "shop-a1a1a1a1 %d", &pid); err != nil || serr != nil {
		t.Fatalf("the daemons the call started: %q (%v, %v); want shop-a1a1a1a1's", log, err, serr)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	// The shim's call registered the task with a 3 s lease and nobody renews it.
	testkit.WaitFor(t, 15*time.Second, "the daemon of the task whose lease expired to stop", func() bool { return gone(pid) })
}

func TestReadOnlyStateRefusesAndLosesNothing(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "keep me")
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	// The state file alone becomes read-only (a bind mount of the file, remounted read-only): a disk the
	// manager cannot write. Root ignores file modes, so a mount is the only honest way to do this.
	db := filepath.Join(m.home, "state.db")
	if out, err := exec.Command("mount", "--bind", db, db).CombinedOutput(); err != nil {
		t.Skipf("cannot bind-mount here: %v: %s", err, out)
	}
	mounted := true
	unmount := func() {
		if mounted {
			if out, err := exec.Command("umount", db).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v: %s", db, err, out)
			}
			mounted = false
		}
	}
	t.Cleanup(unmount)
	if out, err := exec.Command("mount", "-o", "remount,bind,ro", db).CombinedOutput(); err != nil {
		t.Skipf("cannot remount read-only here: %v: %s", err, out)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serve := exec.CommandContext(ctx, m.bins.vibe, "serve")
	serve.Env = m.env
	out, err := serve.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("serve on a read-only state file: %v; want a non-zero exit\n%s", err, out)
	}
	for _, want := range []string{db, "read-only", "writable"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(m.home, api.SocketRel)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused start left its socket behind: %v", err)
	}

	// Writable again: the next start comes up on the same state, the store still there.
	unmount()
	m.start()
	if list := m.cli("store", "list"); !strings.Contains(list, "keep me") {
		t.Errorf("store list after the read-only episode:\n%s", list)
	}
}

func TestWedgedRendererEscalates(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_CALL_TIMEOUT_S=6", "VIBE_BROWSER_IDLE_S=0") // room for the healthy call on a loaded machine
	m.cli("store", "add", "shop")
	if err := ensureStore(m, "shop"); err != nil { // so the timeouts below time the page, not a cold start
		t.Fatal(err)
	}
	exitCode := func(err error) int {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		return 0
	}
	// A page script that never yields wedges its renderer: the call hangs until the shim's bound.
	wedge := "browser-use <<'PY'\neval (() => { for (;;) {} })()\nPY"
	out, err := m.agent("--store shop --task "+taskA, wedge)
	if exitCode(err) != 142 || !strings.Contains(err.Error(), "reloaded the daemon for session shop-a1a1a1a1") {
		t.Fatalf("first wedged call: %v (stdout %q); want exit 142 after a reload", err, out)
	}
	// Another task on the same browser is not held up by the wedged renderer.
	if out := m.mustAgent("--store shop --task "+taskB, "browser-use <<'PY'\neval 6*7\nPY"); strings.TrimSpace(out) != "42" {
		t.Errorf("the other task's call printed %q; want 42", out)
	}
	out, err = m.agent("--store shop --task "+taskA, wedge)
	if exitCode(err) != 75 || !strings.Contains(err.Error(), "record the unfinished work as a gap") {
		t.Fatalf("second wedged call in a row: %v (stdout %q); want exit 75", err, out)
	}
	if !m.running("shop") {
		t.Error("the browser went down with one task's wedged renderer")
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	if log := m.log.String(); !strings.Contains(log, `"event":"wedge_unrecoverable"`) || !strings.Contains(log, `"bu_name":"shop-a1a1a1a1"`) {
		t.Errorf("the manager did not log the unrecoverable wedge:\n%s", lastLines(log, 20))
	}
}

func TestFullDiskRefusesWritesAndRecovers(t *testing.T) {
	t.Parallel()
	// The home on a 4 MiB tmpfs, unmounted after the manager has stopped (cleanups run last first).
	home := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", home).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", home).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", home, err, out)
		}
	})
	m := startManagerIn(t, home)
	m.cli("store", "add", "before")

	// Fill the disk.
	filler := filepath.Join(home, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()

	// A write is refused with a clear error; the manager stays up and reads still work.
	_, err = m.client.CreateStore(context.Background(), api.StoreSpec{Name: "during"})
	if err == nil || !strings.Contains(err.Error(), "disk is full") {
		t.Fatalf("store add on a full disk: %v; want an error saying the disk is full", err)
	}
	if st, err := m.client.Status(context.Background()); err != nil || len(st.Stores) != 1 {
		t.Fatalf("status on a full disk = %d stores, %v; want the one store", len(st.Stores), err)
	}

	// Space again: writes work without a restart, and nothing was lost.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	m.cli("store", "add", "after")
	list := m.cli("store", "list")
	for _, want := range []string{"before", "after"} {
		if !strings.Contains(list, want) {
			t.Errorf("store list lacks %q:\n%s", want, list)
		}
	}
	if strings.Contains(list, "during") {
		t.Errorf("the refused store was recorded anyway:\n%s", list)
	}
	if err := m.stop(); err != nil {
		t.Errorf("the manager exited with %v after the full-disk episode; want 0", err)
	}
}

// chromiumTarget is a target as the store's Chromium lists it on its own /json/list.
type chromiumTarget struct{ ID, Type, URL, Title, WebSocketDebuggerURL string }

// chromiumTargets lists the targets Chromium itself has open for the store with this slug, through its own
// DevTools port (DevToolsActivePort in the profile), past the mux.
func (m *managed) chromiumTargets(slug string) []chromiumTarget {
	m.t.Helper()
	raw, err := os.ReadFile(filepath.Join(m.home, "profiles", slug, "DevToolsActivePort"))
	if err != nil {
		m.t.Fatal(err)
	}
	port, _, _ := strings.Cut(string(raw), "\n")
	resp, err := http.Get("http://127.0.0.1:" + strings.TrimSpace(port) + "/json/list")
	if err != nil {
		m.t.Fatal(err)
	}
	defer resp.Body.Close()
	var targets []chromiumTarget
	if err := json.NewDecoder(resp.Body).Decode(&targets); err != nil {
		m.t.Fatal(err)
	}
	return targets
}

// chromiumPages lists the URLs of the pages the store's Chromium has open (chromiumTargets).
func (m *managed) chromiumPages(slug string) []string {
	m.t.Helper()
	var pages []string
	for _, tg := range m.chromiumTargets(slug) {
		if tg.Type == "page" {
			pages = append(pages, tg.URL)
		}
	}
	return pages
}

// TestNoGraceClosesADisconnectedClientsTabsAtOnce: VIBE_MUX_GRACE_S=0 is documented as "no grace"; it once
// became the 480 s default on its way into the mux.
func TestNoGraceClosesADisconnectedClientsTabsAtOnce(t *testing.T) {
	t.Parallel()
	srv := site(t)
	hasPage := func(pages []string, path string) bool {
		for _, p := range pages {
			if strings.HasSuffix(p, path) {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		grace    string
		wantKept bool
	}{{"0", false}, {"60", true}} {
		t.Run("VIBE_MUX_GRACE_S="+tc.grace, func(t *testing.T) {
			m := startManager(t, onPort, "VIBE_MUX_GRACE_S="+tc.grace)
			m.cli("store", "add", "grace")
			if err := ensureStore(m, "grace"); err != nil {
				t.Fatal(err)
			}
			c := dialRaw(t, m.storeWS("grace", "leaver"))
			c.createPage(srv.URL + "/leaver")
			if !hasPage(m.chromiumPages("grace"), "/leaver") {
				t.Fatal("the client's page is not open in Chromium")
			}
			c.ws.Close()
			testkit.WaitFor(t, 10*time.Second, "the mux to notice the disconnect", func() bool {
				return m.browserOf("grace").Clients == 0
			})
			if tc.wantKept {
				if !hasPage(m.chromiumPages("grace"), "/leaver") {
					t.Error("with a grace period the disconnected client's page was closed")
				}
				return
			}
			testkit.WaitFor(t, 5*time.Second, "the disconnected client's page to be closed", func() bool {
				return !hasPage(m.chromiumPages("grace"), "/leaver")
			})
		})
	}
}
