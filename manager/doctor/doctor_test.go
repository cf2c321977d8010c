package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"vibebrowser/manager/api"
	"vibebrowser/manager/config"
	"vibebrowser/manager/keeper"
	"vibebrowser/manager/service"
	"vibebrowser/mux/sys/procid"
	"vibebrowser/state"
)

var bg = context.Background()

// machineWith is the machine gather would see with env as the whole environment and no manager.
func machineWith(t *testing.T, env map[string]string) *machine {
	t.Helper()
	if env["VIBE_HOME"] == "" {
		env["VIBE_HOME"] = t.TempDir()
	}
	getenv := func(k string) string { return env[k] }
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		t.Fatal(err)
	}
	return &machine{o: Options{Home: cfg.Home, Getenv: getenv, Version: "v1"}, cfg: cfg, noState: true}
}

// script writes an executable shell script.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func wantCheck(t *testing.T, c Check, status Status, fragments ...string) {
	t.Helper()
	if c.Status != status {
		t.Errorf("%s = %s (%s; fix: %s); want %s", c.Name, c.Status, c.Detail, c.Fix, status)
	}
	for _, f := range fragments {
		if !strings.Contains(c.Detail+" fix: "+c.Fix, f) {
			t.Errorf("%s: %q (fix %q) lacks %q", c.Name, c.Detail, c.Fix, f)
		}
	}
	if status != OK && c.Fix == "" {
		t.Errorf("%s is %s with no fix", c.Name, status)
	}
}

func TestParseVersions(t *testing.T) {
	tests := []struct{ line, bu, harness string }{
		{"browser-use 0.13.9", "0.13.9", ""},
		{"0.13.8", "0.13.8", ""},
		{"browser-use v0.13.9 (browser-harness 0.1.12)", "0.13.9", "0.1.12"},
		{"browser_harness==0.1.9, browser-use 0.13.8", "0.13.8", "0.1.9"},
		{"browser-use, version unknown", "", ""},
	}
	for _, tt := range tests {
		if bu, h := parseVersions(tt.line); bu != tt.bu || h != tt.harness {
			t.Errorf("parseVersions(%q) = %q, %q; want %q, %q", tt.line, bu, h, tt.bu, tt.harness)
		}
	}
}

func TestBrowserUseVersions(t *testing.T) {
	dir := t.TempDir()
	// A Python whose browser-harness is $HARNESS, the interpreter of a script the way uv installs one.
	python := script(t, dir, "python3", `if [ "$1" = -c ]; then echo "$HARNESS"; else echo "browser-use 0.13.9"; fi`)
	viaPython := filepath.Join(dir, "bu-python")
	if err := os.WriteFile(viaPython, []byte("#!"+python+"\nimport sys\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, harness string
		status              Status
		want                string
	}{
		{"tested", script(t, dir, "bu-tested", "echo browser-use 0.13.9"), "", OK, "browser-use 0.13.9 (tested, with browser-harness 0.1.12"},
		{"tested pairing printed", script(t, dir, "bu-pair", "echo 'browser-use 0.13.8 (browser-harness 0.1.9)'"), "", OK, "on browser-harness 0.1.9 (tested)"},
		{"untested release", script(t, dir, "bu-new", "echo browser-use 0.14.0"), "", Warn, "not tested with (tested: 0.13.8 with browser-harness 0.1.9, 0.13.9 with browser-harness 0.1.12)"},
		{"untested pairing", script(t, dir, "bu-mix", "echo 'browser-use 0.13.8 browser-harness 0.1.13'"), "", Warn, "a pairing this release was not tested with"},
		{"harness read from its Python", viaPython, "0.1.12", OK, "browser-use 0.13.9 on browser-harness 0.1.12 (tested)"},
		{"harness from its Python untested", viaPython, "0.1.15", Warn, "browser-harness 0.1.15, a pairing"},
		{"no version", script(t, dir, "bu-quiet", "echo hello"), "", Warn, "printed no version (hello)"},
		{"version fails", script(t, dir, "bu-broken", "echo boom >&2; exit 3"), "", Warn, "--version failed: exit status 3: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("HARNESS", tt.harness)
			m := machineWith(t, map[string]string{"VIBE_BROWSER_USE": tt.path})
			wantCheck(t, m.browserUse(bg), tt.status, tt.path, tt.want)
		})
	}
}

func TestBrowserUseMissingAndTheManagersView(t *testing.T) {
	m := machineWith(t, map[string]string{"PATH": t.TempDir()})
	wantCheck(t, m.browserUse(bg), Fail, "no real browser-use CLI was found", "uv tool install browser-use=="+Recommended().BrowserUse,
		"pipx install browser-use=="+Recommended().BrowserUse)

	bu := script(t, t.TempDir(), "browser-use", "echo browser-use 0.13.9")
	other := script(t, t.TempDir(), "browser-use", "echo browser-use 0.13.8 browser-harness 0.1.9")
	tests := []struct {
		name   string
		env    map[string]string // this shell's
		mgr    api.Status
		status Status
		want   []string
	}{
		{"the manager has none, this shell has one", map[string]string{"VIBE_BROWSER_USE": bu},
			api.Status{BrowserUseErr: "no real browser-use CLI was found on the manager's PATH; install…"}, Fail,
			[]string{"the running manager has no browser-use CLI: no real browser-use CLI was found on the manager's PATH;",
				"this shell finds " + bu + " (VIBE_BROWSER_USE)", "restart the manager from this shell"}},
		{"the manager has none, nor this shell", map[string]string{"PATH": t.TempDir()},
			api.Status{BrowserUseErr: "no real browser-use CLI was found on the manager's PATH"}, Fail,
			[]string{"the running manager has no browser-use CLI", "uv tool install browser-use=="}},
		// The incident: a new shell without the VIBE_BROWSER_USE the manager was started with.
		{"the manager's own, this shell has none", map[string]string{"PATH": t.TempDir()},
			api.Status{BrowserUse: bu, BrowserUseFrom: api.BrowserUseFromEnv}, OK,
			[]string{"the running manager's " + bu + " (VIBE_BROWSER_USE), --version", "browser-use 0.13.9 (tested",
				"note: this shell finds none (no real browser-use CLI was found"}},
		{"the manager's differs from this shell's", map[string]string{"VIBE_BROWSER_USE": bu},
			api.Status{BrowserUse: other, BrowserUseFrom: api.BrowserUseFromPath}, OK,
			[]string{"the running manager's " + other + " (first on PATH)", "browser-use 0.13.8 on browser-harness 0.1.9 (tested)",
				"note: a manager started from this shell would use " + bu + " (VIBE_BROWSER_USE)"}},
		{"the manager's is gone", map[string]string{"VIBE_BROWSER_USE": bu},
			api.Status{BrowserUse: "/elsewhere/browser-use"}, Fail,
			[]string{"the running manager's /elsewhere/browser-use: no executable file there", "exit 127"}},
		{"the same", map[string]string{"VIBE_BROWSER_USE": bu},
			api.Status{BrowserUse: bu, BrowserUseFrom: api.BrowserUseFromEnv}, OK, []string{"the running manager's " + bu}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := machineWith(t, tt.env)
			m.mgr = &tt.mgr
			c := m.browserUse(bg)
			wantCheck(t, c, tt.status, tt.want...)
			if tt.name == "the same" && strings.Contains(c.Detail, "note:") {
				t.Errorf("browser-use detail %q has a note; want none when this shell finds the manager's", c.Detail)
			}
		})
	}
}

// TestBrowserUseReadsPackageMetadata lays out a CLI the way uv and pipx install one (a console script whose
// #! names its venv's Python, the distributions' dist-info in that venv's site-packages) whose --version
// answers as browser-use 0.13.8 really does: with its browser-harness's version.
func TestBrowserUseReadsPackageMetadata(t *testing.T) {
	// venv lays out dists (dist-info directory → METADATA) under a prefix whose bin/python answers 0.1.9 to
	// anything, so a check that asked it instead of reading the metadata would see the wrong version.
	venv := func(t *testing.T, dists map[string]string) (prefix, python string) {
		t.Helper()
		prefix = t.TempDir()
		site := filepath.Join(prefix, "lib", "python3.12", "site-packages")
		for dirName, metadata := range dists {
			if err := os.MkdirAll(filepath.Join(site, dirName), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(site, dirName, "METADATA"), []byte(metadata), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(filepath.Join(prefix, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		return prefix, script(t, filepath.Join(prefix, "bin"), "python", "echo 0.1.9")
	}
	// cli writes bin/browser-use under prefix, a console script after its first lines.
	cli := func(t *testing.T, prefix, firstLines string) string {
		t.Helper()
		p := filepath.Join(prefix, "bin", "browser-use")
		body := firstLines + "\nimport sys\nfrom browser_use.skill_cli.main import main\nif __name__ == \"__main__\":\n    sys.exit(main())\n"
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tested := map[string]string{
		"browser_use-0.13.8.dist-info":     "Metadata-Version: 2.4\nName: browser-use\nVersion: 0.13.8\nSummary: x\n\nVersion: 9.9.9\n",
		"browser_harness-0.1.9.dist-info":  "Metadata-Version: 2.4\nName: browser-harness\nVersion: 0.1.9\n",
		"browser_use_sdk-2.0.1.dist-info":  "Metadata-Version: 2.4\nName: browser-use-sdk\nVersion: 2.0.1\n",
		"Browser.Harness-0.1.8.dist-info":  "Name: something-else\nVersion: 7.7.7\n",
		"browser_use-0.13.8.dist-info.bak": "Name: browser-use\nVersion: 0.0.1\n",
	}
	const want = "browser-use 0.13.8 on browser-harness 0.1.9 (tested)"
	t.Run("tested pair", func(t *testing.T) {
		prefix, python := venv(t, tested)
		bu := cli(t, prefix, "#!"+python)
		m := machineWith(t, map[string]string{"VIBE_BROWSER_USE": bu})
		wantCheck(t, m.browserUse(bg), OK, bu+" (VIBE_BROWSER_USE), package metadata: "+want)
	})
	t.Run("pip's form for a long interpreter path", func(t *testing.T) {
		prefix, python := venv(t, tested)
		bu := cli(t, prefix, "#!/bin/sh\n'''exec' \""+python+"\" \"$0\" \"$@\"\n' '''")
		m := machineWith(t, map[string]string{"VIBE_BROWSER_USE": bu})
		wantCheck(t, m.browserUse(bg), OK, "package metadata: "+want)
	})
	t.Run("a venv whose python links to the base Python", func(t *testing.T) {
		_, python := venv(t, tested) // the base Python's prefix holds the packages
		prefix := t.TempDir()
		if err := os.Mkdir(filepath.Join(prefix, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(prefix, "bin", "python")
		if err := os.Symlink(python, link); err != nil {
			t.Fatal(err)
		}
		m := machineWith(t, map[string]string{"VIBE_BROWSER_USE": cli(t, prefix, "#!"+link)})
		wantCheck(t, m.browserUse(bg), OK, "package metadata: "+want)
	})
	t.Run("no metadata: --version, a harness version named as one", func(t *testing.T) {
		prefix, python := venv(t, nil)
		m := machineWith(t, map[string]string{"VIBE_BROWSER_USE": cli(t, prefix, "#!"+python)})
		wantCheck(t, m.browserUse(bg), Warn, `--version "0.1.9": 0.1.9 is a browser-harness version (browser-use 0.13.8's --version`,
			"nothing, if this is browser-use 0.13.8")
	})
	t.Run("untested release", func(t *testing.T) {
		prefix, python := venv(t, map[string]string{"browser_use-0.14.0.dist-info": "Name: browser-use\nVersion: 0.14.0\n"})
		m := machineWith(t, map[string]string{"VIBE_BROWSER_USE": cli(t, prefix, "#!"+python)})
		wantCheck(t, m.browserUse(bg), Warn, "package metadata: browser-use 0.14.0, which this release was not tested with")
	})
}

func TestChromium(t *testing.T) {
	dir := t.TempDir()
	fake := script(t, dir, "chromium", "echo Chromium 156.0.1")
	m := machineWith(t, map[string]string{"VIBE_CHROME": fake})
	wantCheck(t, m.chromium(bg), OK, fake+" (VIBE_CHROME): Chromium 156.0.1")
	m = machineWith(t, map[string]string{"VIBE_CHROME": filepath.Join(dir, "nowhere")})
	wantCheck(t, m.chromium(bg), Fail, "nowhere", "point VIBE_CHROME at an executable Chromium")
}

func TestHome(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my home")
	wantCheck(t, home(dir, false), OK, "does not exist yet")
	for _, d := range []string{dir, filepath.Join(dir, "run")} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "state.db"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, home(dir, false), OK, "yours, private")
	tests := []struct {
		rel  string
		mode os.FileMode
		want string
	}{
		{".", 0o777, "chmod 700 '" + dir + "'"},
		{"run", 0o755, "run has mode 0755 (want 0700)"},
		{"state.db", 0o644, "chmod 600 '" + filepath.Join(dir, "state.db") + "'"},
	}
	for _, tt := range tests {
		t.Run(tt.rel, func(t *testing.T) {
			p := filepath.Join(dir, tt.rel)
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(p, tt.mode); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(p, fi.Mode().Perm()) })
			wantCheck(t, home(dir, false), Fail, tt.want, "other users can read or enter it")
		})
	}
}

func TestPorts(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := probe.Addr().(*net.TCPAddr).Port
	probe.Close()

	m := machineWith(t, map[string]string{})
	m.stores = []state.Store{{ID: "id-b", Slug: "b-shop"}, {ID: "id-a", Slug: "a-shop"}}
	m.registry = map[string]int{"id-a": taken, "id-b": free, api.WebKey: 0}
	names := func(cs []Check) []string {
		var n []string
		for _, c := range cs {
			n = append(n, c.Name)
		}
		return n
	}
	checks := m.ports(bg)
	if got, want := names(checks), []string{"port:a-shop", "port:b-shop", "port:web"}; !slices.Equal(got, want) {
		t.Fatalf("port checks %v; want %v", got, want)
	}
	wantCheck(t, checks[0], Fail, "127.0.0.1:"+strconv.Itoa(taken)+" is taken by pid "+strconv.Itoa(os.Getpid()), "stop that process")
	wantCheck(t, checks[1], OK, "is free")

	m.mgr = &api.Status{PID: os.Getpid()} // the listener is ours: the manager's mux
	wantCheck(t, m.ports(bg)[0], OK, "held by the manager's mux")
}

func TestDisplay(t *testing.T) {
	m := machineWith(t, map[string]string{"VIBE_HEADLESS": "0"})
	wantCheck(t, m.display(), Fail, "no display", "the web browser would run headed", "VIBE_HEADLESS=1")
	m = machineWith(t, map[string]string{"VIBE_HEADLESS": "0", "DISPLAY": ":7"})
	wantCheck(t, m.display(), OK, "DISPLAY=:7: Chromium stores run headed")
	m = machineWith(t, map[string]string{"VIBE_HEADLESS": "1"})
	m.stores = []state.Store{{Slug: "shop", Backend: state.BackendChrome, Config: []byte(`{"headless":false}`)}}
	wantCheck(t, m.display(), Fail, "store shop would run headed")
}

func TestManagerVersion(t *testing.T) {
	m := machineWith(t, map[string]string{})
	m.mgrErr = api.ErrUnreachable
	wantCheck(t, m.manager(), Warn, "no manager is running", "vibe-browser serve")
	m.mgr = &api.Status{PID: 42, Version: "v0"}
	wantCheck(t, m.manager(), Fail, "version v0, but this vibe-browser is version v1", "restart the manager with this binary")
	m.mgr.Version = "v1"
	wantCheck(t, m.manager(), OK, "running (pid 42)")
}

func TestService(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	m := machineWith(t, map[string]string{})
	m.o.Exe = script(t, t.TempDir(), "vibe-browser", "exit 0")
	wantCheck(t, m.service(), OK, "not installed")
	path, err := service.Install(service.Options{Exe: m.o.Exe, Home: m.cfg.Home, User: true}, new(strings.Builder))
	if err != nil {
		t.Fatal(err)
	}
	wantCheck(t, m.service(), Warn, path+" runs "+m.o.Exe+" on "+m.cfg.Home+", not enabled", "systemctl --user enable --now vibe-browser")
	wants := filepath.Join(filepath.Dir(path), "default.target.wants")
	if err := os.MkdirAll(wants, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(path, filepath.Join(wants, service.UnitName)); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, m.service(), OK, "enabled")
	if err := os.Remove(m.o.Exe); err != nil {
		t.Fatal(err)
	}
	wantCheck(t, m.service(), Fail, "that binary is missing", "vibe-browser service install --user")
}

func TestTransport(t *testing.T) {
	m := machineWith(t, map[string]string{})
	wantCheck(t, m.transport(), OK, "on a pipe", "no keeper running")
	run := filepath.Join(m.cfg.Home, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	// A live keeper: this test process stands in for it, with its real start time.
	self, err := procid.Inspect(bg, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	writeIdentity := func(key string, pid int, start int64) {
		b, _ := json.Marshal(keeper.Identity{Format: keeper.Format, Key: key, KeeperPID: pid, KeeperStart: start, BrowserPID: 77})
		if err := os.WriteFile(keeper.IdentityPath(run, key), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeIdentity("_web", os.Getpid(), self.Start)
	wantCheck(t, m.transport(), OK, fmt.Sprintf("1 keeper(s) running: _web (keeper pid %d, browser pid 77)", os.Getpid()))
	// Same pid, another start time: a reused pid is no keeper.
	writeIdentity("s1", os.Getpid(), self.Start-5000)
	wantCheck(t, m.transport(), Warn, "keepers that are gone: s1", "removes its file")

	port := machineWith(t, map[string]string{"VIBE_CHROME_TRANSPORT": "port"})
	wantCheck(t, port.transport(), Warn, "any local process reaches around the mux", "unset VIBE_CHROME_TRANSPORT")

	wantCheck(t, m.portsOfOthers(), OK, "no store")
	m.stores = []state.Store{{Slug: "zed", Backend: state.BackendZiniao}, {Slug: "acme", Backend: state.BackendChrome},
		{Slug: "remote", Backend: state.BackendCDP}}
	wantCheck(t, m.portsOfOthers(), Warn, "remote (cdp), zed (ziniao)", "chrome stores")
}

func TestRunReportsEveryCheckInOrder(t *testing.T) {
	home := t.TempDir()
	env := map[string]string{"VIBE_HOME": home, "PATH": t.TempDir(), "VIBE_TAB_CAP": "many"}
	checks := Run(bg, Options{Home: home, Getenv: func(k string) string { return env[k] }, Version: "v1"})
	var names []string
	for _, c := range checks {
		names = append(names, c.Name)
	}
	want := []string{"config", "chromium", "browser-use", "transport", "home", "disk", "socket", "manager", "state",
		"debugging-ports", "boundary", "display", "service"}
	if !slices.Equal(names, want) {
		t.Errorf("Run names %v; want %v", names, want)
	}
	wantCheck(t, checks[0], Fail, "VIBE_TAB_CAP", "the other checks use the defaults")
	wantCheck(t, checks[2], Fail, "no real browser-use CLI")
	if n := Failed(checks); n < 2 {
		t.Errorf("Failed = %d; want at least the config and browser-use", n)
	}
}

func TestZiniao(t *testing.T) {
	status := `"0"`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Action, Company string }
		if json.NewDecoder(r.Body).Decode(&req) != nil || req.Action != "getBrowserList" || req.Company != "co" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, `{"statusCode":%s,"browserList":[]}`, status)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	store := func(port int) state.Store {
		return state.Store{Slug: "zshop", Backend: state.BackendZiniao, Config: []byte(fmt.Sprintf(`{"ziniao_port":%d}`, port)),
			Ziniao: state.ZiniaoAccount{Company: "co", Username: "me", Password: "pw"}, ZiniaoBrowser: "7"}
	}
	m := machineWith(t, map[string]string{})
	m.stores = []state.Store{store(port), {Slug: "plain", Backend: state.BackendChrome}}
	checks := m.ziniao(bg)
	if len(checks) != 1 || checks[0].Name != "ziniao:zshop" {
		t.Fatalf("ziniao checks %+v; want one, ziniao:zshop", checks)
	}
	wantCheck(t, checks[0], OK, fmt.Sprintf("answers on port %d and accepts account co/me", port))
	status = `"-10003"`
	wantCheck(t, m.ziniao(bg)[0], Fail, "refuses account co/me", "enables WebDriver")

	probe, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := probe.Addr().(*net.TCPAddr).Port
	probe.Close()
	m.stores = []state.Store{store(closed)}
	m.cfg.ZiniaoClient = nil
	wantCheck(t, m.ziniao(bg)[0], Fail, fmt.Sprintf("does not answer on port %d", closed), "--port="+strconv.Itoa(closed), "VIBE_ZINIAO_CLIENT")
	m.cfg.ZiniaoClient = []string{"/opt/ziniao/ziniao"}
	wantCheck(t, m.ziniao(bg)[0], Warn, "the manager starts it (/opt/ziniao/ziniao)")
}

// Without agent users the boundary is by convention only, and said so; a store's agent user that does not
// exist fails with the useradd line.
func TestBoundary(t *testing.T) {
	m := &machine{cfg: &config.Config{Home: t.TempDir()}}
	checks := m.boundary()
	if len(checks) != 1 {
		t.Fatalf("boundary = %+v; want one check", checks)
	}
	wantCheck(t, checks[0], Warn, "by convention only")
	wantCheck(t, m.storeBoundary("acme", "vbtest-no-such-user", ""), Fail, `no user "vbtest-no-such-user"`)
	if c := m.storeBoundary("acme", "vbtest-no-such-user", ""); !strings.Contains(c.Fix, "useradd --system") {
		t.Errorf("a missing agent user's fix is %q; want the useradd line", c.Fix)
	}
}

// Two stores sharing a browser user fail where either has an agent user or a proxy (SPEC §20), naming the
// stores and the user and saying how to give each its own; stores without either may share one.
func TestSharedBrowserUsers(t *testing.T) {
	chrome := func(slug, config string) state.Store {
		return state.Store{ID: "id-" + slug, Slug: slug, Backend: state.BackendChrome, Config: []byte(config)}
	}
	const proxy = `"proxy":"http://u:p@proxy.test:3128"`
	tests := []struct {
		name   string
		stores []state.Store
		want   []string // the failing checks' names
	}{
		{"an agent user's browser user shared", []state.Store{
			chrome("acme", `{"agent_user":"vbtest-agent-a","browser_user":"shared"}`), chrome("bolt", `{"browser_user":"shared"}`)},
			[]string{"browser-user:shared"}},
		{"a proxy's browser user shared", []state.Store{
			chrome("acme", `{`+proxy+`,"browser_user":"shared"}`), chrome("bolt", `{"browser_user":"shared"}`)},
			[]string{"browser-user:shared"}},
		{"stores without agent users or proxies may share", []state.Store{
			chrome("acme", `{"browser_user":"shared"}`), chrome("bolt", `{"browser_user":"shared"}`)}, nil},
		{"each its own", []state.Store{
			chrome("acme", `{"agent_user":"vbtest-agent-a","browser_user":"b-acme"}`), chrome("bolt", `{"agent_user":"vbtest-agent-b"}`),
			chrome("cora", `{`+proxy+`,"browser_user":"b-cora"}`)}, nil},
		{"not chrome: no browser of ours", []state.Store{
			chrome("acme", `{"agent_user":"vbtest-agent-a","browser_user":"shared"}`),
			{ID: "id-z", Slug: "zed", Backend: state.BackendZiniao, Config: []byte(`{"browser_user":"shared"}`)}}, nil},
	}
	if os.Geteuid() == 0 {
		tests = append(tests, struct {
			name   string
			stores []state.Store
			want   []string
		}{"a proxy's browser as root, beside another root browser", []state.Store{
			chrome("acme", `{`+proxy+`,"browser_user":"none"}`), chrome("bolt", `{}`)}, []string{"browser-user:root"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := machineWith(t, map[string]string{})
			m.stores = tt.stores
			var failed []string
			for _, c := range m.boundary() {
				if strings.HasPrefix(c.Name, "browser-user:") {
					failed = append(failed, c.Name)
					wantCheck(t, c, Fail, "stores acme, bolt all run their browsers as "+strings.TrimPrefix(c.Name, "browser-user:"),
						`vibe-browser store set bolt --browser-user ""`, "vibe-b-<slug>")
				}
			}
			if !slices.Equal(failed, tt.want) {
				t.Errorf("boundary's browser-user checks = %q; want %q", failed, tt.want)
			}
		})
	}
}

// VIBE_UI_USERS naming a store's agent or browser user is a warning: the UI refuses that user.
func TestUIUsers(t *testing.T) {
	m := machineWith(t, map[string]string{})
	if got := m.uiUsers(); got != nil {
		t.Errorf("uiUsers without VIBE_UI_USERS = %+v; want no check", got)
	}
	m = machineWith(t, map[string]string{"VIBE_UI_USERS": "nobody"})
	wantCheck(t, m.uiUsers()[0], OK, "nobody")
	m.stores = []state.Store{{Slug: "acme", Name: "Acme", Backend: state.BackendChrome, Config: []byte(`{"agent_user":"nobody"}`)}}
	wantCheck(t, m.uiUsers()[0], Warn, "nobody (store acme's agent user)", "refuses")
}
