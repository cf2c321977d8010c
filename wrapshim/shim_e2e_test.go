package wrapshim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/fakebu/record"
	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/wrapper"
	"vibebrowser/mux/clientid"
)

// The exit codes the agent sees, as the shim's main gives them (cmd/wrapshim/exitcodes.go, SPEC §3).
const (
	exitUsage       = 2
	exitUnavailable = 69
	exitWedged      = 75
	exitConfig      = 78
	exitNoRealCLI   = 127
	exitTimeout     = 142
)

// Binaries built once for the whole package; each test copies the shim the way the manager does.
var shimBin, fakeBU string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wrapshim-e2e-")
	if err != nil {
		panic(err)
	}
	shimBin, fakeBU = filepath.Join(dir, "wrapshim"), filepath.Join(dir, "fakebu")
	for bin, pkg := range map[string]string{shimBin: "vibebrowser/cmd/wrapshim", fakeBU: "vibebrowser/integration/fakebu"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

const taskID = "a1b2c3d4-0000-4000-8000-000000000001"

// fakeManager serves the shim's routes on a real unix socket and records what it was asked.
type fakeManager struct {
	mu       sync.Mutex
	ensures  []api.EnsureRequest
	events   []api.Event
	status   int    // non-zero: answer ensure with this status
	errorMsg string // and this error text
	// hold, if set, holds each ensure's answer until it is closed (it is waited for without mu).
	hold chan struct{}
	// timeline is the store's timeline mode ensure answers ("": none, as a manager before SPEC §15).
	timeline string
}

func (f *fakeManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch r.URL.Path {
	case api.PathSessionEnsure:
		var req api.EnsureRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.ensures = append(f.ensures, req)
		if f.hold != nil {
			f.mu.Unlock()
			<-f.hold
			f.mu.Lock()
		}
		if f.status != 0 {
			w.WriteHeader(f.status)
			json.NewEncoder(w).Encode(api.Error{Message: f.errorMsg, Code: api.CodeRelaunchBudget})
			return
		}
		json.NewEncoder(w).Encode(api.EnsureResponse{CDPWS: "ws://127.0.0.1:9400/tok/client-" + req.ClientID,
			DownloadDir: "/home/downloads/acme/" + clientid.OwnerDir(req.ClientID), Timeline: f.timeline})
	case api.PathEvents:
		var ev api.Event
		json.NewDecoder(r.Body).Decode(&ev)
		f.events = append(f.events, ev)
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

func (f *fakeManager) snapshot() ([]api.EnsureRequest, []api.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.ensures), slices.Clone(f.events)
}

// serve listens on socket; it may be called after the shim started, to test the dial retry.
func (f *fakeManager) serve(t *testing.T, socket string) {
	t.Helper()
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: f}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
}

// env is a temp home with an installed store shim, a fake manager and a record dir for the fake CLI.
type env struct {
	home, dir, records string
	cfg                *api.ShimConfig
	mgr                *fakeManager
}

func newEnv(t *testing.T, edit func(*api.ShimConfig)) *env {
	t.Helper()
	home := t.TempDir()
	e := &env{home: home, dir: filepath.Join(home, "bin", "acme"), records: filepath.Join(home, "records"), mgr: &fakeManager{}}
	for _, d := range []string{"run", "r", "bh-tmp", "records"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e.cfg = &api.ShimConfig{Format: api.ShimFormat, Kind: api.ShimKindStore, StoreID: "0d1c2b3a-store", Slug: "acme",
		ManagerSocket: filepath.Join(home, "run", "manager.sock"), RealBU: fakeBU,
		RuntimeDir: filepath.Join(home, "r"), TmpDir: filepath.Join(home, "bh-tmp"), WorkerSlots: 3,
		CallTimeoutS: 30, KillGraceS: 1, ReloadTimeoutS: 5}
	if edit != nil {
		edit(e.cfg)
	}
	if err := wrapper.Install(e.dir, shimBin, e.cfg); err != nil {
		t.Fatal(err)
	}
	return e
}

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// command prepares the installed shim with the given args, extra env and stdin.
func (e *env) command(args []string, extraEnv []string, stdin []byte) *exec.Cmd {
	cmd := exec.Command(filepath.Join(e.dir, "browser-use"), args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + e.home, "FAKEBU_RECORD_DIR=" + e.records}, extraEnv...)
	cmd.Stdin = bytes.NewReader(stdin)
	return cmd
}

func (e *env) run(t *testing.T, args []string, extraEnv []string, stdin []byte) result {
	t.Helper()
	cmd := e.command(args, extraEnv, stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	res := result{stdout: out.String(), stderr: errb.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		res.code = exit.ExitCode()
	default:
		t.Fatalf("run shim: %v", err)
	}
	return res
}

// recordsOf returns the fake CLI's records in call order.
func (e *env) recordsOf(t *testing.T) []record.Call {
	t.Helper()
	recs, err := record.Read(e.records)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestShimInjectsEnvAndPassesStdin(t *testing.T) {
	e := newEnv(t, nil)
	e.mgr.serve(t, e.cfg.ManagerSocket)
	stdin := []byte("print(page_info())\n\x00\xff\xfe non-UTF-8 and <html> & \"quotes\"\n")
	res := e.run(t, []string{"--worker", "2", "-c", "x"}, []string{"VIBE_TASK_ID=" + taskID, "KEEP_ME=1",
		"http_proxy=http://p:1", "HTTPS_PROXY=http://p:2", "all_proxy=socks://p", "ALL_PROXY=socks://p",
		"https_proxy=x", "HTTP_PROXY=x", "BROWSER_USE_API_KEY=secret", "BH_TAB_MARKER=1",
		"VIBE_DOWNLOAD_DIR=/tmp/mine"}, stdin)
	if res.code != 0 {
		t.Fatalf("shim exit %d; want 0 (stderr %q)", res.code, res.stderr)
	}
	recs := e.recordsOf(t)
	if len(recs) != 1 {
		t.Fatalf("fake CLI ran %d times; want 1", len(recs))
	}
	rec := recs[0]
	if !bytes.Equal(rec.Stdin, stdin) {
		t.Errorf("stdin reached the CLI as %q; want %q byte for byte", rec.Stdin, stdin)
	}
	if !slices.Equal(rec.Args, []string{"-c", "x"}) {
		t.Errorf("CLI args %q; want [-c x]", rec.Args)
	}
	if rec.PGID != rec.PID {
		t.Errorf("CLI pgid %d, pid %d; want its own process group", rec.PGID, rec.PID)
	}
	want := map[string]string{
		"BU_NAME":               "acme-a1b2c3d4-w2",
		"BU_CDP_WS":             "ws://127.0.0.1:9400/tok/client-" + taskID + "-w2",
		"BH_RUNTIME_DIR":        e.cfg.RuntimeDir,
		"BH_RUNTIME_DIR_SHARED": "1",
		"BH_TMP_DIR":            e.cfg.TmpDir,
		"BH_TMP_DIR_SHARED":     "1",
		"BH_TAB_MARKER":         "0",                              // the caller's 1 is overridden: the shim owns the value
		"VIBE_DOWNLOAD_DIR":     "/home/downloads/acme/" + taskID, // the manager's answer, not the caller's
		"KEEP_ME":               "1",
		"VIBE_TASK_ID":          taskID,
	}
	for k, v := range want {
		if got, ok := rec.Getenv(k); !ok || got != v {
			t.Errorf("CLI env %s = %q (set %v); want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"BH_TAB_MARKER", "VIBE_DOWNLOAD_DIR"} {
		if n := countEnv(rec.Env, k); n != 1 {
			t.Errorf("CLI env has %s %d times; want once", k, n)
		}
	}
	for _, k := range []string{"http_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTP_PROXY", "BROWSER_USE_API_KEY"} {
		if v, ok := rec.Getenv(k); ok {
			t.Errorf("CLI env has %s=%q; want it scrubbed", k, v)
		}
	}
	ensures, _ := e.mgr.snapshot()
	wantReq := api.EnsureRequest{Kind: api.KindStore, StoreID: e.cfg.StoreID, ClientID: taskID + "-w2",
		BUName: "acme-a1b2c3d4-w2", TaskID: taskID}
	if len(ensures) != 1 || ensures[0] != wantReq {
		t.Errorf("manager got ensure %+v; want one %+v", ensures, wantReq)
	}
}

// countEnv counts the entries of env that set name.
func countEnv(env []string, name string) int {
	n := 0
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			n++
		}
	}
	return n
}

func TestShimWebKindAsksForTheWebBrowser(t *testing.T) {
	e := newEnv(t, func(c *api.ShimConfig) { c.Kind, c.StoreID, c.Slug = api.ShimKindWeb, "", "" })
	e.mgr.serve(t, e.cfg.ManagerSocket)
	if res := e.run(t, nil, []string{"VIBE_TASK_ID=" + taskID}, nil); res.code != 0 {
		t.Fatalf("web shim exit %d (%s); want 0", res.code, res.stderr)
	}
	ensures, _ := e.mgr.snapshot()
	want := api.EnsureRequest{Kind: api.KindWeb, ClientID: taskID, BUName: "web-a1b2c3d4", TaskID: taskID}
	if len(ensures) != 1 || ensures[0] != want {
		t.Errorf("manager got %+v; want %+v", ensures, want)
	}
}

func TestShimExitStatusPassesThrough(t *testing.T) {
	e := newEnv(t, nil)
	e.mgr.serve(t, e.cfg.ManagerSocket)
	tests := []struct {
		env  string
		want int
	}{
		{"FAKEBU_EXIT=0", 0},
		{"FAKEBU_EXIT=1", 1},
		{"FAKEBU_EXIT=3", 3},
		{"FAKEBU_EXIT=142", 142}, // the CLI's own 142 is not a timeout: no reload
		{"FAKEBU_SIGNAL_SELF=9", 128 + 9},
		{"FAKEBU_SIGNAL_SELF=15", 128 + 15}, // a Go child cannot die of SIGSEGV (the runtime exits 2)
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			res := e.run(t, nil, []string{tt.env, "FAKEBU_STDOUT=hello"}, nil)
			if res.code != tt.want {
				t.Errorf("shim with %s exit %d; want %d (stderr %q)", tt.env, res.code, tt.want, res.stderr)
			}
			if !strings.HasPrefix(tt.env, "FAKEBU_SIGNAL") && res.stdout != "hello" {
				t.Errorf("stdout %q; want the CLI's %q", res.stdout, "hello")
			}
		})
	}
	for _, r := range e.recordsOf(t) {
		if slices.Contains(r.Args, "--reload") {
			t.Errorf("a non-timeout exit triggered %q", r.Args)
		}
	}
}

// TestShimTapsLoseNoOutput: with the timeline full the shim relays the CLI's stdout through a pipe of its own.
// Everything the CLI wrote before it exited reaches the agent, however late the agent reads it: here the CLI
// writes more than the two pipes hold and exits, and the agent starts reading well after the output grace.
func TestShimTapsLoseNoOutput(t *testing.T) {
	e := newEnv(t, nil)
	e.mgr.timeline = api.TimelineFull
	e.mgr.serve(t, e.cfg.ManagerSocket)
	want := strings.Repeat("0123456789abcdef", 120<<10/16) // under one environment string's limit (128 KiB)
	cmd := e.command(nil, []string{"VIBE_TASK_ID=" + taskID, "FAKEBU_STDOUT=" + want}, nil)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // five times the shim's output grace
	got, err := io.ReadAll(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("shim: %v (stderr %q)", err, errb.String())
	}
	if len(got) != len(want) || string(got) != want {
		t.Errorf("the agent read %d bytes of the CLI's %d", len(got), len(want))
	}
}

func counterValue(t *testing.T, e *env, buName string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.cfg.RuntimeDir, "wedge-"+buName+".n"))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// harnesses are the browser-harness behaviours of the fake CLI (FAKEBU_HARNESS): 0.1.9 leaves the daemon's tab
// open on --reload and never marks titles; 0.1.12 closes it and marks titles unless BH_TAB_MARKER is off.
var harnesses = []struct {
	version    string
	closesTabs bool
}{{"0.1.9", false}, {"0.1.12", true}}

// tabMarker is browser-harness 0.1.12's title marker.
const tabMarker = "\U0001F434"

// stopDaemons ends the fake daemons still recorded in the runtime dir when the test ends.
func stopDaemons(t *testing.T, e *env) {
	t.Cleanup(func() {
		pids, _ := filepath.Glob(filepath.Join(e.cfg.RuntimeDir, "bu-*.pid"))
		for _, f := range pids {
			data, _ := os.ReadFile(f)
			var pid int
			if _, err := fmt.Sscan(string(data), &pid); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
}

// TestFakeHarnessMarksWithoutTheShim shows the fake's 0.1.12 marker is real, so its absence through the shim
// (TestShimWedgeEscalation) is the shim's doing.
func TestFakeHarnessMarksWithoutTheShim(t *testing.T) {
	for _, h := range harnesses {
		t.Run(h.version, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(fakeBU)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "BH_RUNTIME_DIR=" + dir, "BU_NAME=bare", "FAKEBU_DAEMON=1",
				"FAKEBU_HARNESS=" + h.version, "FAKEBU_RECORD_DIR=" + dir}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("fake CLI: %v (%s)", err, out)
			}
			reload := exec.Command(fakeBU, "--reload")
			reload.Env = cmd.Env
			if out, err := reload.CombinedOutput(); err != nil {
				t.Fatalf("fake CLI --reload: %v (%s)", err, out)
			}
			recs, err := record.Read(dir)
			if err != nil || len(recs) != 2 || recs[0].Tab == nil {
				t.Fatalf("records %+v (%v); want a call with its daemon's tab and a reload", recs, err)
			}
			if marked := strings.HasPrefix(recs[0].Tab.Title, tabMarker); marked != h.closesTabs {
				t.Errorf("harness %s without BH_TAB_MARKER: tab title %q; want marked %v", h.version, recs[0].Tab.Title, h.closesTabs)
			}
		})
	}
}

func TestShimWedgeEscalation(t *testing.T) {
	for _, h := range harnesses {
		t.Run("harness "+h.version, func(t *testing.T) { testShimWedgeEscalation(t, h.version, h.closesTabs) })
	}
}

// testShimWedgeEscalation runs the wedge path (142 with a --reload, then 75) against a fake CLI playing
// browser-harness version, with a session daemon and its dedicated tab.
func testShimWedgeEscalation(t *testing.T, version string, closesTabs bool) {
	e := newEnv(t, func(c *api.ShimConfig) { c.CallTimeoutS = 1 })
	e.mgr.serve(t, e.cfg.ManagerSocket)
	stopDaemons(t, e)
	fake := []string{"FAKEBU_DAEMON=1", "FAKEBU_HARNESS=" + version}
	wedged := append([]string{"VIBE_TASK_ID=" + taskID, "FAKEBU_SLEEP=30s"}, fake...)
	healthy := append([]string{"VIBE_TASK_ID=" + taskID}, fake...)
	reloads := func() int {
		n := 0
		for _, r := range e.recordsOf(t) {
			if r.Harness != version {
				t.Errorf("the fake played browser-harness %q; want %q", r.Harness, version)
			}
			if r.Tab != nil && strings.Contains(r.Tab.Title, tabMarker) {
				t.Errorf("%q: the daemon's tab is titled %q through the shim; want no marker", r.Args, r.Tab.Title)
			}
			if slices.Equal(r.Args, []string{"--reload"}) {
				if v, _ := r.Getenv("BU_NAME"); v != "acme-a1b2c3d4" {
					t.Errorf("--reload ran with BU_NAME %q; want acme-a1b2c3d4", v)
				}
				switch {
				case r.Tab == nil:
					t.Errorf("--reload found no daemon tab; want the one the hung call's daemon opened")
				case r.Tab.Open == closesTabs:
					t.Errorf("harness %s: --reload left the daemon's tab open=%v; want open=%v", version, r.Tab.Open, !closesTabs)
				}
				n++
			}
		}
		return n
	}
	steps := []struct {
		name    string
		env     []string
		code    int
		reloads int
		events  int
		counter string
		msg     string
	}{
		{"first timeout reloads", wedged, exitTimeout, 1, 0, "1", "timed out after 1s; reloaded the daemon for session acme-a1b2c3d4"},
		{"second timeout gives up", wedged, exitWedged, 1, 1, "2", "record the unfinished work as a gap"},
		{"success resets", healthy, 0, 1, 1, "0", ""},
		{"timeout after reset reloads again", wedged, exitTimeout, 2, 1, "1", "reloaded the daemon"},
		{"ordinary error resets", append(slices.Clone(healthy), "FAKEBU_EXIT=1"), 1, 2, 1, "0", ""},
		{"and the next timeout is a first one", wedged, exitTimeout, 3, 1, "1", "reloaded the daemon"},
	}
	for _, st := range steps {
		res := e.run(t, nil, st.env, []byte("click()"))
		if res.code != st.code {
			t.Fatalf("%s: exit %d; want %d (stderr %q)", st.name, res.code, st.code, res.stderr)
		}
		if !strings.Contains(res.stderr, st.msg) {
			t.Errorf("%s: stderr %q; want it to say %q", st.name, res.stderr, st.msg)
		}
		if got := reloads(); got != st.reloads {
			t.Errorf("%s: %d reloads so far; want %d", st.name, got, st.reloads)
		}
		if _, events := e.mgr.snapshot(); len(events) != st.events {
			t.Errorf("%s: %d events reported; want %d", st.name, len(events), st.events)
		} else if st.events > 0 && (events[0].Kind != api.EventWedgeUnrecoverable || events[0].BUName != "acme-a1b2c3d4" || events[0].TaskID != taskID) {
			t.Errorf("%s: event %+v; want a wedge_unrecoverable for acme-a1b2c3d4", st.name, events[0])
		}
		if got := counterValue(t, e, "acme-a1b2c3d4"); got != st.counter {
			t.Errorf("%s: counter %q; want %q", st.name, got, st.counter)
		}
	}
	// Counters are per BU_NAME: the worker slot's budget is untouched by the main session's timeouts.
	if got := counterValue(t, e, "acme-a1b2c3d4-w1"); got != "" {
		t.Errorf("worker counter %q; want none", got)
	}
	res := e.run(t, []string{"--worker", "1"}, wedged, nil)
	if res.code != exitTimeout {
		t.Errorf("worker's first timeout exit %d; want %d", res.code, exitTimeout)
	}
}

func TestShimCorruptCounterCountsAsZero(t *testing.T) {
	e := newEnv(t, func(c *api.ShimConfig) { c.CallTimeoutS = 1 })
	e.mgr.serve(t, e.cfg.ManagerSocket)
	for _, content := range []string{"", "garbage", "-4", "99999999999999999999999"} {
		path := filepath.Join(e.cfg.RuntimeDir, "wedge-acme.n")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if res := e.run(t, nil, []string{"FAKEBU_SLEEP=30s"}, nil); res.code != exitTimeout {
			t.Errorf("counter %q: exit %d; want %d (a first timeout)", content, res.code, exitTimeout)
		}
	}
}

func TestShimConcurrentTimeoutsKeepCounterConsistent(t *testing.T) {
	e := newEnv(t, func(c *api.ShimConfig) { c.CallTimeoutS = 1 })
	e.mgr.serve(t, e.cfg.ManagerSocket)
	const n = 6
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			codes[i] = e.run(t, nil, []string{"VIBE_TASK_ID=" + taskID, "FAKEBU_SLEEP=30s"}, nil).code
		})
	}
	wg.Wait()
	if got := counterValue(t, e, "acme-a1b2c3d4"); got != fmt.Sprint(n) {
		t.Errorf("counter after %d concurrent timeouts = %q; want %d", n, got, n)
	}
	sort.Ints(codes)
	want := append([]int{exitWedged, exitWedged, exitWedged, exitWedged, exitWedged}, exitTimeout)
	sort.Ints(want)
	if !slices.Equal(codes, want) {
		t.Errorf("exit codes %v; want exactly one %d and the rest %d", codes, exitTimeout, exitWedged)
	}
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestShimKillsChildIgnoringTerm(t *testing.T) {
	e := newEnv(t, func(c *api.ShimConfig) { c.CallTimeoutS, c.KillGraceS = 1, 1 })
	e.mgr.serve(t, e.cfg.ManagerSocket)
	res := e.run(t, nil, []string{"FAKEBU_SLEEP=60s", "FAKEBU_IGNORE_TERM=1"}, nil)
	if res.code != exitTimeout {
		t.Fatalf("exit %d; want %d (stderr %q)", res.code, exitTimeout, res.stderr)
	}
	if res.took > 20*time.Second {
		t.Errorf("the shim took %v with a child ignoring SIGTERM; want it killed after the grace", res.took)
	}
	var call *record.Call
	for _, r := range e.recordsOf(t) {
		if !slices.Contains(r.Args, "--reload") {
			call = &r
		}
	}
	if call == nil {
		t.Fatal("no record of the call")
	}
	if !slices.Contains(call.Signals, "terminated") {
		t.Errorf("child saw signals %q; want SIGTERM first", call.Signals)
	}
	testkit.WaitFor(t, 5*time.Second, "the child to be gone", func() bool { return !alive(call.PID) })
}

func TestShimForwardsSignals(t *testing.T) {
	e := newEnv(t, nil)
	e.mgr.serve(t, e.cfg.ManagerSocket)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			os.RemoveAll(e.records)
			os.MkdirAll(e.records, 0o700)
			cmd := e.command(nil, []string{"FAKEBU_SLEEP=30s"}, nil)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, 10*time.Second, "the CLI to start", func() bool { return len(e.recordsOf(t)) == 1 })
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 128+int(sig) {
				t.Errorf("shim ended with %v; want exit %d", err, 128+int(sig))
			}
			if got := e.recordsOf(t)[0].Signals; !slices.Equal(got, []string{sig.String()}) {
				t.Errorf("child saw %q; want [%s]", got, sig)
			}
		})
	}
}

// A signal before the real CLI started ends the shim as it ends any process that did not ask for the signal,
// and no CLI is started after it.
func TestShimDiesOfSignalBeforeTheChild(t *testing.T) {
	e := newEnv(t, nil)
	e.mgr.hold = make(chan struct{})
	e.mgr.serve(t, e.cfg.ManagerSocket)
	t.Cleanup(func() { close(e.mgr.hold) })
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			before, _ := e.mgr.snapshot()
			cmd := e.command(nil, nil, nil)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, 10*time.Second, "the shim to ask the manager", func() bool {
				ensures, _ := e.mgr.snapshot()
				return len(ensures) > len(before)
			})
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) {
				t.Fatalf("shim ended with %v; want it killed by %s", err, sig)
			}
			if ws := exit.Sys().(syscall.WaitStatus); !ws.Signaled() || ws.Signal() != sig {
				t.Errorf("shim ended with %v; want it killed by %s", ws, sig)
			}
			if recs := e.recordsOf(t); len(recs) != 0 {
				t.Errorf("the real CLI ran %d times; want never", len(recs))
			}
		})
	}
}

func TestShimManagerUnavailable(t *testing.T) {
	t.Run("down", func(t *testing.T) {
		e := newEnv(t, nil)
		res := e.run(t, nil, nil, nil)
		if res.code != exitUnavailable || !strings.Contains(res.stderr, "is the manager running?") {
			t.Errorf("exit %d, stderr %q; want %d naming the manager", res.code, res.stderr, exitUnavailable)
		}
		if res.took < 2*time.Second {
			t.Errorf("gave up after %v; want a retry window of about 3s", res.took)
		}
		if len(e.recordsOf(t)) != 0 {
			t.Error("the real CLI ran without a browser")
		}
	})
	t.Run("refuses", func(t *testing.T) {
		e := newEnv(t, nil)
		e.mgr.status, e.mgr.errorMsg = http.StatusTooManyRequests, "relaunch budget of store acme is spent"
		e.mgr.serve(t, e.cfg.ManagerSocket)
		res := e.run(t, nil, nil, nil)
		if res.code != exitUnavailable || !strings.Contains(res.stderr, "relaunch budget of store acme is spent") {
			t.Errorf("exit %d, stderr %q; want %d with the manager's message", res.code, res.stderr, exitUnavailable)
		}
	})
	t.Run("starts late", func(t *testing.T) {
		e := newEnv(t, nil)
		cmd := e.command(nil, nil, nil)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond) // the manager comes up inside the shim's retry window
		e.mgr.serve(t, e.cfg.ManagerSocket)
		if err := cmd.Wait(); err != nil {
			t.Errorf("shim with a manager starting late: %v; want success", err)
		}
	})
}

func TestShimRealCLIMissing(t *testing.T) {
	notExec := filepath.Join(t.TempDir(), "browser-use")
	os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644)
	for name, path := range map[string]string{"missing": "/nonexistent/browser-use", "not executable": notExec} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, func(c *api.ShimConfig) { c.RealBU = path })
			e.mgr.serve(t, e.cfg.ManagerSocket)
			res := e.run(t, nil, nil, nil)
			if res.code != exitNoRealCLI || !strings.Contains(res.stderr, path) {
				t.Errorf("exit %d, stderr %q; want %d naming %s", res.code, res.stderr, exitNoRealCLI, path)
			}
			if ensures, _ := e.mgr.snapshot(); len(ensures) != 0 {
				t.Error("a browser was ensured for a call that cannot run")
			}
		})
	}
}

// A real CLI that passes the executable check but cannot be executed is found out at the fork, after the
// manager answered: still exit 127, never a silent success.
func TestShimRealCLINotAProgram(t *testing.T) {
	path := filepath.Join(t.TempDir(), "browser-use")
	if err := os.WriteFile(path, []byte("\x00\x01 neither ELF nor script\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *api.ShimConfig) { c.RealBU = path })
	e.mgr.serve(t, e.cfg.ManagerSocket)
	res := e.run(t, nil, nil, nil)
	want := "browser-use: cannot start " + path + ": fork/exec " + path + ": exec format error\n"
	if res.code != exitNoRealCLI || res.stderr != want {
		t.Errorf("exit %d, stderr %q; want %d, %q", res.code, res.stderr, exitNoRealCLI, want)
	}
}

func TestShimRefusalNeverStartsAnything(t *testing.T) {
	e := newEnv(t, nil)
	e.mgr.serve(t, e.cfg.ManagerSocket)
	res := e.run(t, []string{"--cdp-url=ws://127.0.0.1:9222"}, nil, nil)
	if res.code != exitUsage || !strings.Contains(res.stderr, "--cdp-url is not allowed") {
		t.Errorf("exit %d, stderr %q; want %d naming --cdp-url", res.code, res.stderr, exitUsage)
	}
	if strings.Count(strings.TrimSpace(res.stderr), "\n") != 0 {
		t.Errorf("stderr %q; want one line", res.stderr)
	}
	if ensures, _ := e.mgr.snapshot(); len(ensures) != 0 || len(e.recordsOf(t)) != 0 {
		t.Error("a refused call reached the manager or the real CLI")
	}
}

func TestShimGuard(t *testing.T) {
	e := newEnv(t, func(c *api.ShimConfig) { *c = api.ShimConfig{Format: api.ShimFormat, Kind: api.ShimKindGuard} })
	res := e.run(t, nil, nil, nil)
	if res.code != exitUsage || !strings.Contains(res.stderr, "vibe-browser env --store") {
		t.Errorf("guard exit %d, stderr %q; want %d telling how to get a wrapper", res.code, res.stderr, exitUsage)
	}
}

func TestShimConfigProblems(t *testing.T) {
	tests := []struct {
		name    string
		content string // "" removes the file
		want    string
	}{
		{"missing", "", "has no config beside it"},
		{"unknown field", `{"format":1,"kind":"guard","extra":1}`, "unknown field"},
		{"missing format", `{"kind":"guard"}`, "missing format"},
		{"newer format", fmt.Sprintf(`{"format":%d,"kind":"guard"}`, api.ShimFormat+1), "newer than this shim"},
		{"not JSON", `{`, "broken"},
		{"relative real_bu", `{"format":1,"kind":"web","manager_socket":"/s","real_bu":"browser-use","runtime_dir":"/r","tmp_dir":"/t"}`, "real_bu must be an absolute path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, nil)
			path := filepath.Join(e.dir, api.ShimConfigName)
			if tt.content == "" {
				os.Remove(path)
			} else {
				os.WriteFile(path, []byte(tt.content), 0o600)
			}
			res := e.run(t, nil, nil, nil)
			if res.code != exitConfig || !strings.Contains(res.stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d saying %q", res.code, res.stderr, exitConfig, tt.want)
			}
		})
	}
}
