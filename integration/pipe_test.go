//go:build integration

package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/keeper"
)

// The pipe (SPEC §13): launched browsers have no debugging port; a keeper holds their pipe and outlives the
// manager.

// listeningInodes returns the socket inodes of every TCP socket in LISTEN state, IPv4 and IPv6.
func listeningInodes(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Scan() // the header
		for sc.Scan() {
			// sl local rem st tx:rx tr:tm retr uid timeout inode …
			fields := strings.Fields(sc.Text())
			if len(fields) > 9 && fields[3] == "0A" {
				out[fields[9]] = true
			}
		}
		fh.Close()
	}
	return out
}

// socketInodes returns the inodes of the sockets pid holds open.
func socketInodes(pid int) []string {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var inodes []string
	for _, e := range ents {
		link, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err == nil && strings.HasPrefix(link, "socket:[") {
			inodes = append(inodes, strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]"))
		}
	}
	return inodes
}

// groupPIDs lists the live (non-zombie) members of process group pgid.
func groupPIDs(pgid int) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := procStat(pid); ok && st.pgrp == pgid && st.state != "Z" && st.state != "X" {
			pids = append(pids, pid)
		}
	}
	return pids
}

type stat struct {
	state string
	pgrp  int
}

// procStat reads a process's state and process group.
func procStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 3 {
		return stat{}, false
	}
	g, _ := strconv.Atoi(f[2])
	return stat{state: f[0], pgrp: g}, true
}

// keepersOf counts the live keeper processes of a browser key (a zombie has no command line to match).
func keepersOf(key string) int { return len(processesNamed("keep --key " + key + " ")) }

// TestLaunchedBrowsersListenOnNoPort: a store's Chromium and the web browser, with every process of their
// groups and their keepers, hold no listening TCP socket, and no DevToolsActivePort is written.
func TestLaunchedBrowsersListenOnNoPort(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	m.cli("store", "add", "sealed")
	out := m.mustAgent("--store sealed --task "+taskA, "browser-use <<'PY'\neval 6*7\nPY")
	if strings.TrimSpace(out) != "42" {
		t.Fatalf("a call on the pipe printed %q; want 42", out)
	}
	m.cli("web", "start")
	listening := listeningInodes(t)
	for _, slug := range []string{"sealed", api.WebKey} { // the web browser's slug in the status and its profile
		b := m.browserOf(slug)
		if b.Status != api.StatusRunning || b.PID == 0 || b.KeeperPID == 0 {
			t.Fatalf("%s: %+v; want running with a keeper", slug, b)
		}
		pids := append(groupPIDs(b.PID), b.KeeperPID)
		if len(pids) < 3 {
			t.Errorf("%s: Chromium's group is %v; want the browser and its helpers", slug, pids)
		}
		for _, pid := range pids {
			for _, ino := range socketInodes(pid) {
				if listening[ino] {
					t.Errorf("%s: pid %d (of the browser's group or its keeper) listens on TCP (socket inode %s)", slug, pid, ino)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(m.home, "profiles", slug, "DevToolsActivePort")); err == nil {
			t.Errorf("%s: its profile has a DevToolsActivePort; on the pipe nothing writes one", slug)
		}
		sock := filepath.Join(m.home, "run", "keep-"+b.Key+".sock")
		if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: keeper socket %s: %v, %v; want mode 0600", slug, sock, fi, err)
		}
	}
}

// TestKeeperKilledRecoversOnNextCall: kill -9 of a keeper takes its Chromium with it; the next call starts one
// browser again, and its task's tabs are its own.
func TestKeeperKilledRecoversOnNextCall(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	m.cli("store", "add", "kept")
	web := site(t)
	m.mustAgent("--store kept --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/before\nPY")
	before := m.browserOf("kept")
	if err := syscall.Kill(before.KeeperPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "Chromium to follow its killed keeper", func() bool {
		return len(groupPIDs(before.PID)) == 0
	})
	out := m.mustAgent("--store kept --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/after\ntargets\nPY")
	if !strings.Contains(out, "/after") {
		t.Errorf("the call after the keeper's death printed %q; want its /after tab", out)
	}
	after := m.browserOf("kept")
	if after.Status != api.StatusRunning || after.PID == before.PID || after.KeeperPID == before.KeeperPID {
		t.Errorf("after the keeper's death: %+v; want a new browser and keeper (were %d, %d)", after, before.PID, before.KeeperPID)
	}
	if n := keepersOf(after.Key); n != 1 {
		t.Errorf("%d keepers run for the store; want one", n)
	}
}

// TestRestartAdoptsOverTheKeeper: manager kill -9 and a new manager adopt the browser through its keeper;
// the old manager's sessions were detached, so a client attaching again gets its tab's events once.
func TestRestartAdoptsOverTheKeeper(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	m.cli("store", "add", "restart")
	web := site(t)
	c := dialRaw(t, m.storeWS("restart", "holder"))
	target, session := c.createPage(web.URL + "/held")
	if _, err := c.evaluate(session, "1"); err != nil {
		t.Fatal(err)
	}
	before := m.browserOf("restart")
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.cmd.Wait()
	m.start()
	after := m.browserOf("restart")
	if after.PID != before.PID || after.KeeperPID != before.KeeperPID || after.Status != api.StatusRunning {
		t.Fatalf("after the restart: %+v; want browser %d and keeper %d adopted", after, before.PID, before.KeeperPID)
	}
	again := dialRaw(t, m.storeWS("restart", "holder"))
	if got := again.targetIDs(false); len(got) != 1 || got[0] != target {
		t.Fatalf("the client after the restart sees %v; want its tab %s", got, target)
	}
	var at struct{ SessionID string }
	again.must("Target.attachToTarget", map[string]any{"targetId": target, "flatten": true}, "", &at)
	v, err := again.evaluate(at.SessionID, "location.pathname")
	if err != nil || string(v) != `"/held"` {
		t.Errorf("evaluate in the adopted tab = %s, %v; want \"/held\"", v, err)
	}
}

// TestManagerKilledMidMessage: the mux dies (its manager's kill -9) while it reads Chromium's messages (a page
// logs 100 KB to its console every few milliseconds, to a client that listens) and while it writes a client's
// 16 MiB commands to the pipe, one after another: it is likely to die inside a message each way (without the
// keeper's NUL, half the runs failed at 8 MiB). The keeper takes the pipe back (a NUL ends the half-written
// command, the half-read message is dropped), and the next manager adopts the same Chromium, whose mux answers
// a new client's call with that call's own answer, on its first connection: no half message ran, no stale
// answer came.
func TestManagerKilledMidMessage(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	m.cli("store", "add", "midway")
	web := site(t)
	reader := dialRaw(t, m.storeWS("midway", "reader"))
	_, rs := reader.createPage(web.URL + "/noisy")
	reader.must("Runtime.enable", nil, rs, nil)
	if _, err := reader.evaluate(rs, `setInterval(() => console.log("x".repeat(100000)), 3), 1`); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the console's stream", func() bool { return len(reader.Events("Runtime.consoleAPICalled")) >= 20 })
	writer := dialRaw(t, m.storeWS("midway", "writer"))
	_, ws := writer.createPage(web.URL + "/busy")
	big := `"` + strings.Repeat("y", 16<<20) + `".length`
	for range 2 { // two in flight: the mux always has the next one to write
		go func() {
			for {
				if _, err := writer.Call("Runtime.evaluate", map[string]any{"expression": big}, ws); err != nil {
					return // the manager is gone
				}
			}
		}()
	}
	time.Sleep(time.Second)
	before := m.browserOf("midway")
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.cmd.Wait()
	logged := len(m.log.String())
	m.start()
	after := m.browserOf("midway")
	if after.PID != before.PID || after.KeeperPID != before.KeeperPID || after.Status != api.StatusRunning {
		t.Fatalf("after the restart: %+v; want browser %d and keeper %d adopted", after, before.PID, before.KeeperPID)
	}
	c := dialRaw(t, m.storeWS("midway", "after"))
	_, s := c.createPage(web.URL + "/after")
	if v, err := c.evaluate(s, "6*7"); err != nil || string(v) != "42" {
		t.Errorf("the first call after the restart = %s, %v; want its own answer, 42", v, err)
	}
	if log := m.log.String()[logged:]; strings.Contains(log, "browser connection failed") {
		t.Errorf("the new manager's mux failed to connect at least once; want its first connection good:\n%s", log)
	}
	// The keeper's own command after the take-back is answered at once: the half-written command did not
	// swallow it.
	kept, err := os.ReadFile(keeper.LogPath(filepath.Join(m.home, "run"), after.Key))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(kept), "the keeper holds the pipe again") || strings.Contains(string(kept), "did not answer the keeper") {
		t.Errorf("the keeper's log:\n%s\nwant the pipe taken back, the browser answering the keeper at once", kept)
	}
}

// TestPortTransportStillWorks: VIBE_CHROME_TRANSPORT=port launches on a loopback port as before, with no keeper.
func TestPortTransportStillWorks(t *testing.T) {
	t.Parallel()
	m := startManager(t, onPort, "VIBE_BROWSER_IDLE_S=0")
	m.cli("store", "add", "ported")
	out := m.mustAgent("--store ported --task "+taskA, "browser-use <<'PY'\neval 6*7\nPY")
	if strings.TrimSpace(out) != "42" {
		t.Fatalf("a call on a port printed %q; want 42", out)
	}
	b := m.browserOf("ported")
	if b.KeeperPID != 0 {
		t.Errorf("a browser on a port has keeper %d; want none", b.KeeperPID)
	}
	if _, err := os.Stat(filepath.Join(m.home, "profiles", "ported", "DevToolsActivePort")); err != nil {
		t.Errorf("on a port Chromium writes DevToolsActivePort: %v", err)
	}
}

// TestPortBrowserAdoptedAfterUpgrade: a browser an older manager started on a port is adopted by a manager on
// the pipe, not killed, and moves to the pipe at its next start.
func TestPortBrowserAdoptedAfterUpgrade(t *testing.T) {
	t.Parallel()
	home := settledTempDir(t)
	old := startManagerIn(t, home, onPort, "VIBE_BROWSER_IDLE_S=0")
	old.cli("store", "add", "upgraded")
	web := site(t)
	old.mustAgent("--store upgraded --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/kept\nPY")
	before := old.browserOf("upgraded")
	if err := old.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	old.cmd.Wait()
	m := startManagerIn(t, home, "VIBE_BROWSER_IDLE_S=0")
	if b := m.browserOf("upgraded"); b.PID != before.PID || b.Status != api.StatusRunning || b.KeeperPID != 0 {
		t.Fatalf("after the upgrade: %+v; want the port's browser %d adopted", b, before.PID)
	}
	out := m.mustAgent("--store upgraded --task "+taskA, "browser-use <<'PY'\ntargets\nPY")
	if !strings.Contains(out, "/kept") {
		t.Errorf("the task after the upgrade sees %q; want its /kept tab", out)
	}
	m.cli("browser", "stop", "upgraded")
	m.mustAgent("--store upgraded --task "+taskA, "browser-use <<'PY'\neval 1\nPY")
	if b := m.browserOf("upgraded"); b.KeeperPID == 0 {
		t.Errorf("after its next start: %+v; want it on the pipe, with a keeper", b)
	}
}
