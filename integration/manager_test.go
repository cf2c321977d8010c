//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// Binaries built once per test binary, copied (by the manager) the way production copies the shim.
var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

type binaries struct{ vibe, shim, fakeBU, fakeZiniaoClient, probe string }

func builtBinaries(t testing.TB) binaries {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "vibe-integration-bin-")
		if buildErr != nil {
			return
		}
		for name, pkg := range map[string]string{"vibe-browser": "vibebrowser/cmd/vibe-browser",
			"wrapshim": "vibebrowser/cmd/wrapshim", "fakebu": "vibebrowser/integration/fakebu",
			"fakeziniaoclient": "vibebrowser/integration/fakeziniaoclient", "boundaryprobe": "vibebrowser/integration/boundaryprobe"} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(buildDir, name), pkg).CombinedOutput()
			if err != nil {
				buildErr = fmt.Errorf("build %s: %v\n%s", pkg, err, out)
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binaries{vibe: filepath.Join(buildDir, "vibe-browser"), shim: filepath.Join(buildDir, "wrapshim"),
		fakeBU: filepath.Join(buildDir, "fakebu"), fakeZiniaoClient: filepath.Join(buildDir, "fakeziniaoclient"),
		probe: filepath.Join(buildDir, "boundaryprobe")}
}

// settledTempDir is t.TempDir for directories Chromium writes into: its helpers may still be flushing the
// profile for a moment after the browser is gone, so removal is retried instead of failing the test.
func settledTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", strings.ReplaceAll(t.Name(), "/", "_")+"-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for os.RemoveAll(dir) != nil && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}

// managed is a real `vibe-browser serve` child on a temp home.
type managed struct {
	t      *testing.T
	bins   binaries
	home   string
	env    []string
	cmd    *exec.Cmd
	log    *syncBuffer // the manager writes it while tests read it
	client *api.Client
	uiAddr string // VIBE_UI_ADDR unless the test's extra environment changed it
}

// startManager runs `vibe-browser serve` with the fake browser-use CLI, the built shim and the given extra
// environment (VIBE_CHROME defaults to the real Chromium).
// onPort launches the test's browsers on a loopback debugging port instead of the pipe, for a test that reads
// Chromium's own truth past the mux (its /json/list, a page's own DevTools socket), which only a port allows.
// What such a test checks is the mux's, the same on either transport.
const onPort = "VIBE_CHROME_TRANSPORT=port"

func startManager(t *testing.T, extra ...string) *managed {
	t.Helper()
	return startManagerIn(t, settledTempDir(t), extra...)
}

// startManagerIn is startManager on a home of the caller's.
func startManagerIn(t *testing.T, home string, extra ...string) *managed {
	t.Helper()
	return startManagerWith(t, builtBinaries(t), home, extra...)
}

// portRange is the ports a manager of a test may use: its UI's just below the base, its stores' from the
// base up. The ranges stay below Linux's ephemeral ports (32768 and up): a restarted manager must find its
// ports free, not taken by some connection's local end meanwhile.
const (
	portsLow, portsHigh = testkit.EndToEndPortsLow, testkit.EndToEndPortsHigh
	portRange           = 100
)

// lastPortRange is the range the last manager of this test binary was given: tests run in parallel, and
// two managers on one range would take each other's ports. It starts at a random range, so a second test
// binary running beside this one (another package's) most likely starts elsewhere.
var lastPortRange = func() *atomic.Int64 {
	var n atomic.Int64
	n.Store(int64(rand.IntN((portsHigh - portsLow) / portRange)))
	return &n
}()

// portBase is a registry base no other manager of this test binary has been given.
func portBase() int {
	n := lastPortRange.Add(1) % ((portsHigh - portsLow) / portRange)
	return portsLow + 1 + int(n)*portRange
}

// startManagerWith is startManagerIn running bins.vibe, for serve and the CLI (an installed copy).
func startManagerWith(t *testing.T, bins binaries, home string, extra ...string) *managed {
	t.Helper()
	m := prepareManager(t, bins, home, extra...)
	m.start()
	return m
}

// prepareManager is a manager of startManagerWith's, not started yet.
func prepareManager(t *testing.T, bins binaries, home string, extra ...string) *managed {
	t.Helper()
	// Every manager serves its web UI, so every test starts it and checks its log lines; its port is just
	// below the manager's registry range, which the registry never hands out (it counts up from the base),
	// so parallel tests never meet on the default 9399.
	base := portBase()
	uiAddr := fmt.Sprintf("127.0.0.1:%d", base-1)
	env := []string{"HOME=" + home, "PATH=/usr/local/bin:/usr/bin:/bin", "VIBE_HOME=" + home,
		"VIBE_BROWSER_USE=" + bins.fakeBU, "VIBE_SHIM=" + bins.shim, "VIBE_HEADLESS=1",
		"VIBE_CHROME=" + chromiumBinary(t), fmt.Sprintf("VIBE_PROXY_PORT_BASE=%d", base), "VIBE_UI_ADDR=" + uiAddr}
	env = append(env, extra...)
	m := &managed{t: t, bins: bins, home: home, env: env, log: &syncBuffer{}, uiAddr: uiAddr,
		client: api.NewClient(filepath.Join(home, api.SocketRel))}
	// Registered before any start, so it runs after every start's cleanup has stopped its manager.
	t.Cleanup(func() { checkLogLines(t, m.log.String()) })
	return m
}

// start runs the manager and waits until it answers.
func (m *managed) start() {
	m.t.Helper()
	m.launch()
	m.awaitHealth()
}

// launch runs the manager without waiting for it.
func (m *managed) launch() {
	t := m.t
	t.Helper()
	m.cmd = exec.Command(m.bins.vibe, "serve")
	m.cmd.Env = m.env
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := m.cmd
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", lastLines(m.log.String(), 200))
		}
	})
}

// awaitHealth waits until the manager answers.
func (m *managed) awaitHealth() {
	m.t.Helper()
	m.awaitHealthWithin(20 * time.Second)
}

// awaitHealthWithin waits until the manager answers, up to within.
func (m *managed) awaitHealthWithin(within time.Duration) {
	t := m.t
	t.Helper()
	testkit.WaitFor(t, within, "the manager to answer", func() bool {
		_, err := m.client.Health(context.Background())
		return err == nil
	})
}

// stop sends SIGTERM and waits for the exit status.
func (m *managed) stop() error {
	m.cmd.Process.Signal(syscall.SIGTERM)
	return m.cmd.Wait()
}

// cli runs `vibe-browser --home H args…` and returns stdout, failing the test on a non-zero exit.
func (m *managed) cli(args ...string) string {
	m.t.Helper()
	cmd := exec.Command(m.bins.vibe, append([]string{"--home", m.home}, args...)...)
	cmd.Env = m.env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		m.t.Fatalf("vibe-browser %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// cliErr runs `vibe-browser --home H args…` with an empty PATH and returns its stdout and stderr together
// and its error, for commands expected to fail.
func (m *managed) cliErr(args ...string) (string, error) {
	m.t.Helper()
	cmd := exec.Command(m.bins.vibe, append([]string{"--home", m.home}, args...)...)
	cmd.Env = append(append([]string{}, m.env...), "PATH=/nonexistent")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// agent runs a bash script the way an agent launcher does: eval the env lines, then the script.
func (m *managed) agent(envArgs, script string) (string, error) {
	m.t.Helper()
	full := fmt.Sprintf("set -e\neval \"$(%s --home %s env %s)\"\n%s", m.bins.vibe, m.home, envArgs, script)
	cmd := exec.Command("bash", "-c", full)
	cmd.Env = append(m.env, "FAKEBU_DRIVE=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, errb.String())
	}
	return out.String(), err
}

func (m *managed) mustAgent(envArgs, script string) string {
	m.t.Helper()
	out, err := m.agent(envArgs, script)
	if err != nil {
		m.t.Fatalf("agent (%s): %v", envArgs, err)
	}
	return out
}

// site serves small titled pages.
func site(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<!doctype html><title>page %s</title><p>%s</p>", strings.Trim(r.URL.Path, "/"), r.URL.Path)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const (
	taskA = "a1a1a1a1-0000-4000-8000-00000000000a"
	taskB = "b2b2b2b2-0000-4000-8000-00000000000b"
)

func TestManagerAgentFlow(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	t.Cleanup(func() { wantNoRefusals(t, m.log.String()) })
	web := site(t)
	var store api.Store
	if err := json.Unmarshal([]byte(m.cli("store", "add", "Acme Shop", "--json")), &store); err != nil {
		t.Fatal(err)
	}
	if store.Slug != "acme-shop" || store.Browser.Status != "stopped" {
		t.Fatalf("store add = %+v", store)
	}
	if _, err := os.Stat(filepath.Join(m.home, "bin", "acme-shop", "browser-use")); err != nil {
		t.Fatalf("no wrapper after store add: %v", err)
	}

	out := m.mustAgent("--store acme-shop --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/alpha\neval document.title\nPY")
	if !strings.Contains(out, `"page alpha"`) {
		t.Errorf("task A drove %q; want the page title", out)
	}
	out = m.mustAgent("--store acme-shop --task "+taskB, "browser-use <<'PY'\nopen "+web.URL+"/beta\ntargets\nPY")
	if !strings.Contains(out, "/beta") || strings.Contains(out, "/alpha") {
		t.Errorf("task B sees %q; want its own /beta and never task A's /alpha", out)
	}
	out = m.mustAgent("--store acme-shop --task "+taskA, "browser-use <<'PY'\ntargets\nPY")
	if !strings.Contains(out, "/alpha") || strings.Contains(out, "/beta") {
		t.Errorf("task A sees %q; want /alpha only", out)
	}
	out = m.mustAgent("--store acme-shop --task "+taskA, "browser-use --worker 2 <<'PY'\nopen "+web.URL+"/gamma\ntargets\nPY")
	if !strings.Contains(out, "/gamma") || strings.Contains(out, "/alpha") || strings.Contains(out, "/beta") {
		t.Errorf("worker 2 of task A sees %q; want only its own /gamma", out)
	}
	out = m.mustAgent("--web --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/delta\neval document.title\nPY")
	if !strings.Contains(out, `"page delta"`) {
		t.Errorf("web shim drove %q; want the page title", out)
	}

	var st api.Status
	if err := json.Unmarshal([]byte(m.cli("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	running := map[string]bool{}
	for _, b := range st.Browsers {
		running[b.Slug] = b.Status == "running" && b.PID > 0 && b.ProxyPort > 0
	}
	if !running["acme-shop"] || !running["_web"] {
		t.Errorf("status browsers %+v; want acme-shop and _web running", st.Browsers)
	}
	tasks := map[string]api.Task{}
	for _, task := range st.Tasks {
		tasks[task.ID] = task
	}
	if tasks[taskA].Status != "running" || tasks[taskB].Store != store.ID {
		t.Errorf("status tasks %+v; want both tasks registered running by their shim calls", st.Tasks)
	}
	if len(st.Browsers) < 2 || st.Browsers[0].Key == "" {
		t.Errorf("status browsers lack keys: %+v", st.Browsers)
	}

	// Third-party clients connect to the printed endpoints and stay inside their own tabs.
	if err := json.Unmarshal([]byte(m.cli("store", "show", "acme-shop", "--json")), &store); err != nil {
		t.Fatal(err)
	}
	if store.Browser.Status != "running" || store.Browser.PID == 0 {
		t.Errorf("store show browser %+v; want running with a pid", store.Browser)
	}
	for client, endpoint := range map[string]string{"puppeteer": store.CDPWS, "playwright": store.CDPHTTP} {
		got := connectClient(t, client, endpoint, web.URL+"/"+client)
		if got.Title != "page "+client {
			t.Errorf("%s title %q; want %q", client, got.Title, "page "+client)
		}
		for _, u := range got.URLs {
			if strings.Contains(u, "/alpha") || strings.Contains(u, "/beta") || strings.Contains(u, "/gamma") {
				t.Errorf("%s sees another client's page %s", client, u)
			}
		}
	}
}

// clientPages is what manager_connect.js prints: the title of the page it opened and every page it sees.
type clientPages struct {
	Title string   `json:"title"`
	URLs  []string `json:"urls"`
}

// connectClient runs a third-party client (puppeteer or playwright) on a store's printed endpoint: it opens
// url in a new page.
func connectClient(t *testing.T, client, endpoint, url string) clientPages {
	t.Helper()
	node := exec.Command("node", filepath.Join("js", "manager_connect.js"), client, endpoint, url)
	res, err := node.CombinedOutput()
	if err != nil {
		t.Fatalf("%s through %s: %v\n%s", client, endpoint, err, res)
	}
	var got clientPages
	if err := json.Unmarshal(lastLine(res), &got); err != nil {
		t.Fatalf("%s printed %s: %v", client, res, err)
	}
	return got
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

// faultyChrome is a VIBE_CHROME wrapper: profiles named doomed* die at start, hang* never become ready
// (with a grandchild marking the process group), slow* wait until two of them have begun, everything else is
// the real Chromium.
func faultyChrome(t *testing.T, marker string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(slowBarrier(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`#!/bin/bash
for a in "$@"; do
  case "$a" in
    --user-data-dir=*/doomed*) echo "doomed: crashing at start" >&2; exit 1;;
    --user-data-dir=*/hang*) bash -c 'exec -a %[1]s sleep 1000' & sleep 1000; exit 0;;
    --user-data-dir=*/slow*)
      # Meets the other slow launch: each waits (at most 30 s) until both have begun, and says so.
      touch %[3]s/in-$$
      for i in $(seq 300); do
        if [ "$(ls %[3]s | grep -c '^in-')" -ge 2 ]; then touch %[3]s/met-$$; break; fi
        sleep 0.1
      done;;
  esac
done
exec %[2]s "$@"
`, marker, chromiumBinary(t), slowBarrier(dir))
	p := filepath.Join(dir, "chrome")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// slowBarrier is the folder where a faultyChrome in dir notes its slow launches.
func slowBarrier(dir string) string { return filepath.Join(dir, "slow-launches") }

func ensureStore(m *managed, ref string) error {
	_, err := m.client.StoreBrowser(context.Background(), ref, api.ActionEnsure)
	return err
}

// TestAgentTabTitleCarriesNoMarker drives a real tab through the real wrapper with the fake CLI playing each
// browser-harness: 0.1.12 would put its marker in front of the title of the tab it controls, which in a shared
// browser the person and the other tenants see, unless BH_TAB_MARKER=0, which the shim sets. The title is read
// from Chromium's own target list, past the mux.
func TestAgentTabTitleCarriesNoMarker(t *testing.T) {
	t.Parallel()
	for _, harness := range []string{"0.1.9", "0.1.12"} {
		t.Run("harness "+harness, func(t *testing.T) {
			m := startManager(t, onPort)
			web := site(t)
			m.cli("store", "add", "Marked")
			m.env = append(m.env, "FAKEBU_HARNESS="+harness)
			out := m.mustAgent("--store marked --task "+taskA, "browser-use <<'PY'\nopen "+web.URL+"/plain\neval document.title\nPY")
			if strings.TrimSpace(out) != `"page plain"` {
				t.Errorf("the agent read the title %s; want \"page plain\" unmarked", out)
			}
			found := false
			for _, tg := range m.chromiumTargets("marked") {
				if strings.Contains(tg.Title, "\U0001F434") {
					t.Errorf("Chromium's tab %s is titled %q; want no browser-harness marker", tg.URL, tg.Title)
				}
				if tg.Type == "page" && strings.HasSuffix(tg.URL, "/plain") {
					found = true
					if tg.Title != "page plain" {
						t.Errorf("Chromium's tab %s is titled %q; want %q", tg.URL, tg.Title, "page plain")
					}
				}
			}
			if !found {
				t.Errorf("Chromium has no /plain tab: %+v", m.chromiumTargets("marked"))
			}
		})
	}
}

func TestRelaunchBudgetIsPerStore(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_CHROME="+faultyChrome(t, "unused"), "VIBE_BROWSER_RELAUNCH_MAX=2")
	m.cli("store", "add", "doomed")
	m.cli("store", "add", "fine")
	// The first start fails; two budgeted relaunches fail; the next is refused without a launch.
	wantCodes := []string{api.CodeStartFailed, api.CodeStartFailed, api.CodeStartFailed, api.CodeRelaunchBudget}
	for i, want := range wantCodes {
		err := ensureStore(m, "doomed")
		if !api.IsCode(err, want) {
			t.Fatalf("ensure #%d of the doomed store: %v; want code %s", i+1, err, want)
		}
		if want == api.CodeStartFailed && !strings.Contains(err.Error(), "crashing at start") {
			t.Errorf("start failure %q does not carry Chromium's stderr", err)
		}
		if want == api.CodeRelaunchBudget && !strings.Contains(err.Error(), "VIBE_BROWSER_RELAUNCH_MAX") {
			t.Errorf("budget refusal %q does not say what to do", err)
		}
	}
	if err := ensureStore(m, "fine"); err != nil {
		t.Errorf("another store could not start while doomed is over budget: %v", err)
	}
	// A human's explicit start clears the budget (and fails again, honestly).
	_, err := m.client.StoreBrowser(context.Background(), "doomed", api.ActionStart)
	if !api.IsCode(err, api.CodeStartFailed) {
		t.Errorf("explicit start after the budget: %v; want a real attempt (%s)", err, api.CodeStartFailed)
	}
}

func processesNamed(marker string) []string {
	out, _ := exec.Command("pgrep", "-f", marker).Output()
	return strings.Fields(string(out))
}

func TestStartTimeoutKillsTheLauncherGroup(t *testing.T) {
	t.Parallel()
	marker := fmt.Sprintf("vibe-hang-marker-%d", rand.IntN(1e9))
	m := startManager(t, "VIBE_CHROME="+faultyChrome(t, marker), "VIBE_BROWSER_START_TIMEOUT_S=3")
	m.cli("store", "add", "hang")
	began := time.Now()
	err := ensureStore(m, "hang")
	if !api.IsCode(err, api.CodeStartTimeout) || !strings.Contains(err.Error(), "VIBE_BROWSER_START_TIMEOUT_S=3") {
		t.Fatalf("ensure of a launcher that never gets ready: %v; want start_timeout naming the knob", err)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("the start timeout of 3s took %v to answer", took)
	}
	testkit.WaitFor(t, 10*time.Second, "the launcher's process group to be gone", func() bool {
		return len(processesNamed(marker)) == 0
	})
}

func TestStoresStartConcurrently(t *testing.T) {
	t.Parallel()
	chrome := faultyChrome(t, "unused")
	m := startManager(t, "VIBE_CHROME="+chrome)
	m.cli("store", "add", "slow-a")
	m.cli("store", "add", "slow-b")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, ref := range []string{"slow-a", "slow-b"} {
		wg.Go(func() { errs[i] = ensureStore(m, ref) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// Each slow launch waits for the other to begin before Chromium starts: under a global lock the second
	// would begin only after the first had given up waiting, and neither would have met the other.
	entries, _ := os.ReadDir(slowBarrier(filepath.Dir(chrome)))
	met := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "met-") {
			met++
		}
	}
	if met != 2 {
		t.Errorf("%d of the two slow launches met the other while starting; want both (the stores start together, no global lock)", met)
	}
}

func TestQuitStopsBrowsers(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	m.cli("store", "add", "shop")
	if err := ensureStore(m, "shop"); err != nil {
		t.Fatal(err)
	}
	s, err := m.client.GetStore(context.Background(), "shop")
	if err != nil || s.Browser.PID == 0 {
		t.Fatalf("store %+v, %v; want a running browser", s, err)
	}
	if err := m.stop(); err != nil {
		t.Errorf("manager exit after SIGTERM: %v; want 0", err)
	}
	if syscall.Kill(s.Browser.PID, 0) == nil {
		t.Errorf("Chromium %d outlived the manager's quit", s.Browser.PID)
	}
	if _, err := os.Stat(filepath.Join(m.home, api.SocketRel)); !os.IsNotExist(err) {
		t.Errorf("socket left behind after quit (%v)", err)
	}
}

// TestTakenPortIsReallocated: a store's port is bound from store add on, so another program can take it
// only while no manager runs; the next manager gives it up for a fresh one.
func TestTakenPortIsReallocated(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	var s api.Store
	if err := json.Unmarshal([]byte(m.cli("store", "add", "squatted", "--json")), &s); err != nil {
		t.Fatal(err)
	}
	if err := m.stop(); err != nil {
		t.Fatal(err)
	}
	squatter, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", s.ProxyPort))
	if err != nil {
		t.Fatalf("take port %d: %v", s.ProxyPort, err)
	}
	defer squatter.Close()
	m.start()
	out := m.mustAgent("--store squatted", "browser-use <<'PY'\neval 'still works'\nPY")
	if strings.TrimSpace(out) != `"still works"` {
		t.Errorf("call with the registered port taken printed %q", out)
	}
	after, err := m.client.GetStore(context.Background(), "squatted")
	if err != nil {
		t.Fatal(err)
	}
	if after.ProxyPort == s.ProxyPort || after.Browser.Status != api.StatusRunning {
		t.Errorf("store after the port was taken: %+v; want a new port and a running browser", after)
	}
}

// syncBuffer is a bytes.Buffer a child writes to while the test reads it.
type syncBuffer struct {
	mu  sync.Mutex // mu guards buf
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
