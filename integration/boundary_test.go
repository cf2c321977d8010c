//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/mux/sys/osuser"
)

// The store boundary (SPEC §14, §20): two stores with agent users of their own (Acme's browser user the one
// the manager makes for it, Bolt's named), a root manager, real clients as each agent user through
// vibe-browser agent, and then every reach of the SPEC's list tried from store Acme's agent user, each refused
// with a clear error. The README's security table lists the same reaches.

// Users made for the test (useradd --system, idempotently); CI runs as root. Acme's browser user is the
// manager's to make (SPEC §20: vibe-b-<slug>).
const (
	agentUserA   = "vbtest-agent-a"
	agentUserB   = "vbtest-agent-b"
	browserUser  = "vibe-b-acme"
	browserUserB = "vbtest-browser-b"
)

// boundaryHome is a manager home whose parent every user may enter, as a root manager's home must be.
func boundaryHome(t *testing.T) string {
	t.Helper()
	parent := settledTempDir(t)
	if err := os.Chmod(parent, 0o711); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(parent, "home")
}

// reachableBinaries are the built binaries where every user may run them (the shim runs the fake
// browser-use as the agent user).
func reachableBinaries(t *testing.T) binaries {
	t.Helper()
	bins := builtBinaries(t)
	if err := os.Chmod(filepath.Dir(bins.vibe), 0o755); err != nil {
		t.Fatal(err)
	}
	return bins
}

// probeResult is what boundaryprobe printed.
type probeResult struct {
	OK     bool   `json:"ok"`
	Status int    `json:"status"`
	Error  string `json:"error"`
	Body   string `json:"body"`
}

// runAs runs a command as u with env and returns its combined output and error.
func runAs(u *osuser.User, env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Credential()}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestStoreBoundary(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the store boundary needs a root manager; CI runs as root")
	}
	a, b := testkit.SystemUser(t, agentUserA), testkit.SystemUser(t, agentUserB)
	brB := testkit.SystemUser(t, browserUserB)
	bins := reachableBinaries(t)
	home := boundaryHome(t)
	m := startManagerWith(t, bins, home)
	web := site(t)
	var acme, bolt api.Store
	for _, s := range []struct {
		dst  *api.Store
		args []string
	}{{&acme, []string{"Acme", "--agent-user", agentUserA}}, {&bolt, []string{"Bolt", "--agent-user", agentUserB, "--browser-user", browserUserB}}} {
		if err := json.Unmarshal([]byte(m.cli(append([]string{"store", "add"}, append(s.args, "--json")...)...)), s.dst); err != nil {
			t.Fatal(err)
		}
	}
	if acme.AgentUser != agentUserA || acme.BrowserUser != browserUser || bolt.BrowserUser != browserUserB {
		t.Fatalf("store add printed users %q/%q and %q/%q; want %s/%s and %s/%s", acme.AgentUser, acme.BrowserUser,
			bolt.AgentUser, bolt.BrowserUser, agentUserA, browserUser, agentUserB, browserUserB)
	}

	// Real clients, as each store's agent user, through vibe-browser agent: the fake browser-use through the
	// shim, and puppeteer on the task's capability URL (vibe-browser endpoint).
	const taskA2 = "a1a1a1a1-0000-4000-8000-0000000000a2"
	// The agent users run node scripts from a copy any user reads, never from the checkout (a private clone).
	forAgents := testkit.ForOtherUsers(t, "js", "node_modules")
	js := filepath.Join(forAgents, "js", "manager_connect.js")
	for _, c := range []struct {
		store, task string
		user        *osuser.User
	}{{"acme", taskA, a}, {"bolt", taskB, b}} {
		out := m.cli("agent", "--store", c.store, "--task", c.task, "--", "bash", "-c",
			"id -un; echo \"$HOME\"; browser-use <<'PY'\nopen "+web.URL+"/"+c.store+"-page\nPY")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) < 2 || lines[0] != c.user.Name || lines[1] != filepath.Join(home, "agents", c.store) {
			t.Fatalf("vibe-browser agent for %s printed %q; want its agent user %s and HOME in its agent area first", c.store, out, c.user.Name)
		}
	}
	// The manager made Acme's browser user for its first start.
	br, err := osuser.Lookup(browserUser)
	if err != nil {
		t.Fatalf("Acme's browser user after its browser started: %v; want the manager to have made it", err)
	}
	// A task's token opens its store's aux session (SPEC §20), through the shim as the agent user.
	out := m.cli("agent", "--store", "acme", "--task", taskA, "--", "bash", "-c",
		"FAKEBU_DRIVE=1 browser-use --session acme-aux <<'PY'\nenv BU_CDP_WS\nPY")
	if !strings.HasSuffix(strings.TrimSpace(out), "/client-"+api.AuxClient) {
		t.Errorf("browser-use --session acme-aux as %s under its task's token printed %q; want the aux client's URL", agentUserA, out)
	}
	out = m.cli("agent", "--store", "acme", "--task", taskA2, "--", "bash", "-c",
		fmt.Sprintf("node %s puppeteer \"$(%s endpoint --store acme)\" %s/puppeteer-page", js, bins.vibe, web.URL))
	var pages clientPages
	if err := json.Unmarshal(lastLine([]byte(out)), &pages); err != nil || pages.Title != "page puppeteer-page" {
		t.Fatalf("puppeteer as %s on its capability URL printed %q (%v); want its page", agentUserA, out, err)
	}
	for _, u := range pages.URLs {
		if strings.Contains(u, "acme-page") || strings.Contains(u, "bolt-page") {
			t.Errorf("puppeteer (task %s) sees another task's page %s", taskA2, u)
		}
	}

	// Downloads work across the uids: playwright, as A's agent user on its capability URL, gets its file
	// (path() in its own temporary folder, saveAs()), and the manager files it in the task's folder as the
	// agent user's own: the folder 0700, the file 0600.
	const taskA3 = "a1a1a1a1-0000-4000-8000-0000000000a3"
	dl := downloadSite(t)
	pwjs := filepath.Join(forAgents, "js", "downloads_playwright.js")
	out = m.cli("agent", "--store", "acme", "--task", taskA3, "--", "bash", "-c",
		fmt.Sprintf("node %s \"$(%s endpoint --store acme --http)\" '%s/?who=playwright' </dev/null", pwjs, bins.vibe, dl.URL))
	if !strings.Contains(out, `"pathBytes":"playwright report.csv\n","saveAsBytes":"playwright report.csv\n"`) {
		t.Fatalf("playwright's download as %s printed %q; want path() and saveAs() to hold the served bytes", agentUserA, out)
	}
	filed := filepath.Join(home, "downloads", "acme", taskA3, "report.csv")
	testkit.WaitFor(t, 10*time.Second, "playwright's download filed in its task's folder", func() bool {
		_, err := os.Stat(filed)
		return err == nil
	})
	for p, perm := range map[string]os.FileMode{filepath.Dir(filed): 0o700, filed: 0o600} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != a.UID || fi.Mode().Perm() != perm {
			t.Errorf("%s is uid %d, mode %04o; want %s's, %04o", p, st.Uid, fi.Mode().Perm(), agentUserA, perm)
		}
	}

	// The browsers run as their browser users, sandboxed, with no debugging port.
	for _, c := range []struct {
		store api.Store
		user  *osuser.User
	}{{acme, br}, {bolt, brB}} {
		s, err := m.client.GetStore(context.Background(), c.store.Slug)
		if err != nil || s.Browser.PID <= 0 {
			t.Fatalf("store %s: %+v, %v; want its browser running", c.store.Slug, s.Browser, err)
		}
		if uid := procUID(t, s.Browser.PID); uid != c.user.UID {
			t.Errorf("store %s's Chromium runs as uid %d; want its browser user %s (%d)", s.Slug, uid, c.user.Name, c.user.UID)
		}
		if fi, err := os.Stat(filepath.Join(home, "profiles", s.Slug)); err != nil ||
			int(fi.Sys().(*syscall.Stat_t).Uid) != c.user.UID || fi.Mode().Perm() != 0o700 {
			t.Errorf("store %s's profile: %v, %v; want its browser user %s's, 0700", s.Slug, fi, err, c.user.Name)
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", s.Browser.PID))
		for _, flag := range []string{"--no-sandbox", "--remote-debugging-port"} {
			if bytes.Contains(cmdline, []byte(flag)) {
				t.Errorf("store %s's Chromium runs with %s", s.Slug, flag)
			}
		}
		if ports := listeningTCP(t, c.user.UID); len(ports) > 0 {
			t.Errorf("browser user %s listens on TCP ports %v; want none (the browser is on its pipe)", c.user.Name, ports)
		}
	}

	// Every reach, from store Acme's agent user.
	ctx := context.Background()
	tokA, err := m.client.MintTaskToken(ctx, taskA, "acme")
	if err != nil {
		t.Fatal(err)
	}
	probe := func(args ...string) probeResult {
		t.Helper()
		out, err := runAs(a, []string{"PATH=/usr/bin:/bin"}, bins.probe, args...)
		var r probeResult
		if jerr := json.Unmarshal([]byte(lastLine([]byte(out))), &r); jerr != nil {
			t.Fatalf("boundaryprobe %s: %v, %v: %s", strings.Join(args, " "), err, jerr, out)
		}
		return r
	}
	agentSock := filepath.Join(home, api.AgentSocketRel)
	ensureBody := func(storeID, client, task string) string {
		body, _ := json.Marshal(api.EnsureRequest{Kind: api.KindStore, StoreID: storeID, ClientID: client, BUName: "probe", TaskID: task, Via: api.ViaCDP})
		return string(body)
	}
	own := probe("call", agentSock, tokA.Token, "POST", api.PathSessionEnsure, ensureBody(acme.ID, taskA, taskA))
	var ownResp api.EnsureResponse
	if !own.OK || json.Unmarshal([]byte(own.Body), &ownResp) != nil || ownResp.CDPWS == "" {
		t.Fatalf("ensure on agent.sock for A's own client: %+v; want its capability URL", own)
	}
	capA := ownResp.CDPWS
	port := func(u string) string { return strings.Split(strings.TrimPrefix(u, "ws://127.0.0.1:"), "/")[0] }

	keeperSockets, _ := filepath.Glob(filepath.Join(home, "run", "*", "*", "keep-*.sock"))
	more, _ := filepath.Glob(filepath.Join(home, "run", "keep-*.sock"))
	keeperSockets = append(keeperSockets, more...)
	if len(keeperSockets) < 2 {
		t.Fatalf("found keeper sockets %v; want both stores' (the test looks in run/ and run/*/*/)", keeperSockets)
	}
	denied := "permission denied"
	reaches := []struct {
		what   string
		args   []string
		status int    // the refusal's status; 0 for an OS refusal
		want   string // in the refusal's text
	}{
		{"B's profile", []string{"read", filepath.Join(home, "profiles", "bolt")}, 0, denied},
		{"A's own profile", []string{"read", filepath.Join(home, "profiles", "acme")}, 0, denied},
		{"state.db", []string{"read", filepath.Join(home, "state.db")}, 0, denied},
		{"run/manager.sock", []string{"dial", filepath.Join(home, api.SocketRel)}, 0, denied},
		{"r/<B>/", []string{"read", filepath.Join(home, "r", "bolt")}, 0, denied},
		{"downloads/<B>/<task>/", []string{"read", filepath.Join(home, "downloads", "bolt", taskB)}, 0, denied},
		{"agent.sock without a token", []string{"call", agentSock, "-", "POST", api.PathSessionEnsure, ensureBody(acme.ID, taskA, taskA)}, http.StatusUnauthorized, "Authorization: Bearer"},
		{"agent.sock with A's token for B", []string{"call", agentSock, tokA.Token, "POST", api.PathSessionEnsure, ensureBody(bolt.ID, taskA, taskA)}, http.StatusForbidden, "only for its own store"},
		{"agent.sock with A's token as another task", []string{"call", agentSock, tokA.Token, "POST", api.PathSessionEnsure, ensureBody(acme.ID, taskA2, taskA2)}, http.StatusForbidden, "only as itself"},
		{"agent.sock with A's token for another task's client", []string{"call", agentSock, tokA.Token, "POST", api.PathSessionEnsure, ensureBody(acme.ID, taskA2, taskA)}, http.StatusForbidden, "its own clients only"},
		{"agent.sock for an owner's route", []string{"call", agentSock, tokA.Token, "GET", api.PathStores}, http.StatusForbidden, "is not served on"},
		{"agent.sock for a UI login code", []string{"call", agentSock, tokA.Token, "POST", api.PathUILogin}, http.StatusForbidden, "is not served on"},
		{"B's mux with A's capability", []string{"ws", strings.Replace(capA, port(capA), port(bolt.CDPWS), 1)}, http.StatusUnauthorized, ""},
		{"A's mux on its store-token URL", []string{"ws", acme.CDPWS + "/client-" + taskA}, http.StatusForbidden, ""},
		{"A's mux as another client id", []string{"ws", strings.TrimSuffix(capA, taskA) + taskA2}, http.StatusUnauthorized, ""},
		{"A's own profile's file, handed to a page", []string{"files", capA, filepath.Join(home, "profiles", "acme", "Local State")}, 0, "not readable by the store's agent user"},
	}
	for _, sock := range keeperSockets {
		reaches = append(reaches, struct {
			what   string
			args   []string
			status int
			want   string
		}{"a keeper socket " + sock, []string{"dial", sock}, 0, denied})
	}
	// A file the browser user may read and the agent user may not, outside the home: a page reads only what its
	// agent could.
	secret := filepath.Join(settledTempDir(t), "browser-only.txt")
	os.Chmod(filepath.Dir(secret), 0o755)
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chown(secret, br.UID, br.GID)
	reaches = append(reaches, struct {
		what   string
		args   []string
		status int
		want   string
	}{"a file only the browser user reads, handed to a page", []string{"files", capA, secret}, 0, agentUserA})
	for _, r := range reaches {
		got := probe(r.args...)
		if got.OK || got.Status != r.status || !strings.Contains(got.Error, r.want) {
			t.Errorf("%s from %s: %+v; want refused (status %d) with %q", r.what, agentUserA, got, r.status, r.want)
		}
	}
	// The agent's own file outside the home passes: the rule refuses only what the agent could not read.
	mine := filepath.Join(filepath.Dir(secret), "agent-a.txt")
	os.WriteFile(mine, []byte("mine"), 0o600)
	os.Chown(mine, a.UID, a.GID)
	if got := probe("files", capA, mine); !got.OK {
		t.Errorf("A's own file handed to its page: %+v; want it accepted", got)
	}

	// B's shim with A's token, and the owner's commands as A: each refused.
	env := []string{"PATH=/usr/bin:/bin", "HOME=/", "VIBE_HOME=" + home, "VIBE_TASK_ID=" + taskA, api.TaskTokenEnv + "=" + tokA.Token}
	if out, err := runAs(a, env, filepath.Join(home, "bin", "bolt", "browser-use"), "state"); err == nil || !strings.Contains(out, "only for its own store") {
		t.Errorf("B's shim run by A with A's token: %v: %s; want refused, naming the rule", err, out)
	}
	for _, args := range [][]string{{"store", "show", "bolt", "--json"}, {"ui"}} {
		if out, err := runAs(a, env, bins.vibe, append([]string{"--home", home}, args...)...); err == nil || !strings.Contains(out, denied) {
			t.Errorf("vibe-browser %s as %s: %v: %s; want refused (the owner's socket is root's)", strings.Join(args, " "), agentUserA, err, out)
		}
	}

	// The task ends: its token dies with it.
	m.cli("task", "set", taskA, "--status", "completed")
	if got := probe("call", agentSock, tokA.Token, "POST", api.PathSessionEnsure, ensureBody(acme.ID, taskA, taskA)); got.Status != http.StatusUnauthorized {
		t.Errorf("the token of a completed task: %+v; want 401", got)
	}
}

// A manager that is not root refuses to start with an agent user configured, saying why.
func TestNonRootServeRefusesAgentUsers(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the manager as another user")
	}
	u := testkit.SystemUser(t, agentUserB)
	bins := reachableBinaries(t)
	home := boundaryHome(t)
	if err := os.MkdirAll(home, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(home, u.UID, u.GID)
	out, err := runAs(u, []string{"PATH=/usr/bin:/bin", "HOME=" + home, "VIBE_HOME=" + home, "VIBE_UI_ADDR=off",
		"VIBE_AGENT_USER=" + agentUserA}, bins.vibe, "serve")
	if err == nil || !strings.Contains(out, "needs the manager to run as root") {
		t.Errorf("a non-root serve with VIBE_AGENT_USER: %v: %s; want a refusal saying it needs root", err, out)
	}
}

// procUID is the real uid of process pid.
func procUID(t *testing.T, pid int) int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid, _ := strconv.Atoi(strings.Fields(rest)[0])
			return uid
		}
	}
	t.Fatalf("no Uid line in /proc/%d/status", pid)
	return -1
}

// listeningTCP lists the local ports uid listens on (IPv4 and IPv6).
func listeningTCP(t *testing.T, uid int) []string {
	t.Helper()
	var ports []string
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 8 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			if owner, _ := strconv.Atoi(fields[7]); owner == uid {
				ports = append(ports, fields[1])
			}
		}
	}
	return ports
}
