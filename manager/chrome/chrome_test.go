package chrome

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
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
	"vibebrowser/mux/errdefs"
	"vibebrowser/mux/sys/procid"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(fakeModeEnv) != "" {
		os.Exit(fakeMain())
	}
	keeper.RunIfAsked() // the keeper of a browser on the pipe
	goleak.VerifyTestMain(m)
}

// writeScript writes an executable shell script and returns its path.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-chrome")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// readPIDs reads one pid per line; a missing file is no pids.
func readPIDs(t *testing.T, path string) []int {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("pid file %s: %q", path, f)
		}
		pids = append(pids, n)
	}
	return pids
}

func isLive(pid int) bool {
	_, ok := procid.Live(context.Background(), pid)
	return ok
}

// fakeBrowser returns the test binary as a fake Chromium and sets the environment the fake reads.
func fakeBrowser(t *testing.T, env map[string]string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(fakeModeEnv, "browser")
	for _, k := range []string{fakeCloseEnv, fakeTermEnv, fakeHelperEnv} {
		t.Setenv(k, env[k])
	}
	return exe
}

// launchFake launches the fake browser and stops it at cleanup.
func launchFake(t *testing.T, env map[string]string) *Process {
	t.Helper()
	exe := fakeBrowser(t, env)
	p, err := Launch(context.Background(), Options{
		Transport:    TransportPort,
		Binary:       exe,
		ProfileDir:   filepath.Join(t.TempDir(), "profile"),
		Headless:     true,
		ReadyTimeout: 10 * time.Second,
		Log:          testkit.Log(t),
	})
	if err != nil {
		t.Fatalf("Launch(fake): %v", err)
	}
	t.Cleanup(func() {
		if err := p.Stop(context.Background()); err != nil {
			t.Errorf("cleanup Stop: %v", err)
		}
	})
	return p
}

// startHolder starts a long-lived process whose command line is args (the test binary in idle mode, so
// its argv is whatever we pass) and kills it at cleanup.
func startHolder(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), fakeModeEnv+"=idle")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	// The child must have exec'd (its argv visible) before callers look at it.
	testkit.WaitFor(t, 5*time.Second, "holder argv", func() bool {
		info, ok := procid.Live(context.Background(), cmd.Process.Pid)
		// /proc/<pid>/cmdline can read empty for a moment between fork and exec.
		return ok && len(info.Cmdline) > 0 && slices.Equal(info.Cmdline[1:], args)
	})
	return cmd
}

func TestBuildArgs(t *testing.T) {
	tests := []struct {
		name      string
		o         Options
		want      []string
		wantNot   []string
		wantError bool
	}{
		{name: "pipe", o: Options{ProfileDir: "/p"}, want: []string{"--remote-debugging-pipe"}, wantNot: []string{"--remote-debugging-port=0"}},
		{name: "headed on a port", o: Options{ProfileDir: "/p", Transport: TransportPort}, want: []string{"--user-data-dir=/p", "--remote-debugging-port=0", "--no-first-run", "--no-default-browser-check", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-popup-blocking"}, wantNot: []string{"--headless", "--no-sandbox", "--enable-automation", "--remote-debugging-pipe", "--disable-features"}},
		{name: "headed, features of the caller's own", o: Options{ProfileDir: "/p", ExtraArgs: []string{"--disable-features=Foo"}}, want: []string{"--disable-features=Foo"}, wantNot: []string{"Omnibox"}},
		{name: "headless", o: Options{ProfileDir: "/p", Headless: true}, want: []string{"--headless", "--disable-gpu", "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup"}, wantNot: []string{"--no-sandbox", "--enable-automation"}},
		{name: "headless, features of the caller's own", o: Options{ProfileDir: "/p", Headless: true, ExtraArgs: []string{"--disable-features=Foo", "--lang=de", "--disable-features=Bar,Baz", "--disable-features="}},
			want: []string{"--lang=de", "--disable-features=WebUIOmniboxPopup,WebUIOmniboxAimPopup,Foo,Bar,Baz"}, wantNot: []string{"--disable-features=Foo", "--disable-features=Bar"}},
		{name: "no-sandbox", o: Options{ProfileDir: "/p", NoSandbox: true}, want: []string{"--no-sandbox"}, wantNot: []string{"--headless", "--enable-automation"}},
		{name: "portable", o: Options{ProfileDir: "/p", Portable: true}, want: portableFlags},
		{name: "older profile", o: Options{ProfileDir: "/p"}, wantNot: []string{"--password-store", "--use-mock-keychain"}},
		{name: "extra", o: Options{ProfileDir: "/p", ExtraArgs: []string{"--lang=de"}}, want: []string{"--lang=de"}, wantNot: []string{"--enable-automation"}},
		{name: "identity", o: Options{ProfileDir: "/p", Identity: Identity{Proxy: "socks5://u:pw@h:1", ForwardPort: 9411, Timezone: "Europe/Berlin", Lang: "de-DE"}},
			want:    []string{"--proxy-server=http://127.0.0.1:9411", "--proxy-bypass-list=<-loopback>", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp", "--lang=de-DE", "--accept-lang=de-DE"},
			wantNot: []string{"socks5://u:pw@h:1", "--proxy-server=socks5://u:pw@h:1"}},
		{name: "extra enable-automation", o: Options{ProfileDir: "/p", ExtraArgs: []string{"--enable-automation"}}, wantError: true},
		{name: "extra user-data-dir", o: Options{ProfileDir: "/p", ExtraArgs: []string{"--user-data-dir=/q"}}, wantError: true},
		{name: "extra debugging port", o: Options{ProfileDir: "/p", ExtraArgs: []string{"--remote-debugging-port=9222"}}, wantError: true},
		{name: "extra debugging pipe", o: Options{ProfileDir: "/p", Transport: TransportPort, ExtraArgs: []string{"--remote-debugging-pipe"}}, wantError: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := buildArgs(tt.o)
			if tt.wantError {
				if !errors.Is(err, ErrInvalid) {
					t.Fatalf("buildArgs(%v) error = %v; want ErrInvalid", tt.o, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.o.Headless && testkit.HeadlessDisabledFeatures != strings.Join(headlessDisabledFeatures, ",") {
				t.Errorf("testkit.HeadlessDisabledFeatures = %q; want the features turned off here, %q", testkit.HeadlessDisabledFeatures, headlessDisabledFeatures)
			}
			if got[0] != "--user-data-dir="+tt.o.ProfileDir {
				t.Errorf("buildArgs()[0] = %q; want the profile", got[0])
			}
			for _, w := range tt.want {
				if !slices.Contains(got, w) {
					t.Errorf("buildArgs() = %q; missing %q", got, w)
				}
			}
			if n := len(slices.DeleteFunc(slices.Clone(got), func(a string) bool { return !strings.HasPrefix(a, disableFeaturesFlag) })); n > 1 {
				t.Errorf("buildArgs() = %q; %d --disable-features switches, of which Chromium reads one", got, n)
			}
			for _, w := range tt.wantNot {
				if slices.ContainsFunc(got, func(a string) bool { return strings.Contains(a, w) }) {
					t.Errorf("buildArgs() = %q; must not contain %q", got, w)
				}
			}
		})
	}
}

func TestPrepareProfile(t *testing.T) {
	tests := []struct {
		name      string
		existing  string // "" = no file
		wantKeep  map[string]any
		wantMoved bool
	}{
		{name: "no file"},
		{name: "merge", existing: `{"browser":{"window":"<b>"},"session":{"startup_urls":["https://a/?x=<1>"],"restore_on_startup":4},"n":1.5}`,
			wantKeep: map[string]any{"browser": map[string]any{"window": "<b>"}, "n": 1.5}},
		{name: "session not an object", existing: `{"session":7,"x":true}`, wantKeep: map[string]any{"x": true}},
		{name: "corrupt", existing: `{"session":`, wantMoved: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile := t.TempDir()
			path := filepath.Join(profile, "Default", "Preferences")
			if tt.existing != "" {
				if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(tt.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			moved, err := prepareProfile(profile, nil)
			if err != nil {
				t.Fatal(err)
			}
			if (moved != "") != tt.wantMoved {
				t.Errorf("prepareProfile moved = %q; want moved %v", moved, tt.wantMoved)
			}
			if tt.wantMoved {
				if got, _ := os.ReadFile(moved); string(got) != tt.existing {
					t.Errorf("moved-aside file = %q; want %q", got, tt.existing)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(data), `\u003c`) {
				t.Errorf("Preferences HTML-escaped: %s", data)
			}
			var got map[string]any
			if err := json.Unmarshal(data, &got); err != nil {
				t.Fatalf("Preferences not JSON: %v: %s", err, data)
			}
			sess, _ := got["session"].(map[string]any)
			if sess["restore_on_startup"] != float64(1) {
				t.Errorf("session.restore_on_startup = %v; want 1 (in %s)", sess["restore_on_startup"], data)
			}
			if tt.name == "merge" {
				urls, _ := sess["startup_urls"].([]any)
				if len(urls) != 1 || urls[0] != "https://a/?x=<1>" {
					t.Errorf("session.startup_urls = %v; want kept", sess["startup_urls"])
				}
			}
			for k, v := range tt.wantKeep {
				if gb, _ := json.Marshal(got[k]); string(gb) != mustJSON(t, v) {
					t.Errorf("Preferences[%q] = %s; want %s", k, gb, mustJSON(t, v))
				}
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("Preferences mode = %v, %v; want 0600", fi.Mode().Perm(), err)
			}
			ents, _ := os.ReadDir(filepath.Dir(path))
			for _, e := range ents {
				if strings.Contains(e.Name(), ".tmp") {
					t.Errorf("temp file left behind: %s", e.Name())
				}
			}
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFind(t *testing.T) {
	mkExe := func(t *testing.T, dir, name string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name     string
		onPath   []string
		bundle   bool
		explicit string // "exe", "missing", "dir", "bare"
		want     string // name of the expected file, "" = ErrNoBrowser
	}{
		{name: "explicit path", explicit: "exe", onPath: []string{"chromium"}, want: "my-chrome"},
		{name: "explicit missing", explicit: "missing", onPath: []string{"chromium"}},
		{name: "explicit dir", explicit: "dir", onPath: []string{"chromium"}},
		{name: "explicit bare name on PATH", explicit: "bare", onPath: []string{"chromium", "my-chrome"}, want: "my-chrome"},
		{name: "chromium first", onPath: []string{"google-chrome", "chromium-browser", "chromium"}, want: "chromium"},
		{name: "chromium-browser before google-chrome", onPath: []string{"google-chrome", "chromium-browser"}, want: "chromium-browser"},
		{name: "google-chrome", onPath: []string{"google-chrome"}, want: "google-chrome"},
		{name: "app bundle", bundle: true, want: "Google Chrome"},
		{name: "nothing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pathDir, other := t.TempDir(), t.TempDir()
			t.Setenv("PATH", pathDir)
			for _, n := range tt.onPath {
				mkExe(t, pathDir, n)
			}
			saved := bundleCandidates
			t.Cleanup(func() { bundleCandidates = saved })
			bundleCandidates = []string{filepath.Join(other, "Google Chrome.app/Contents/MacOS/Google Chrome")}
			if tt.bundle {
				mkExe(t, other, "Google Chrome.app/Contents/MacOS/Google Chrome")
			}
			var explicit string
			switch tt.explicit {
			case "exe":
				explicit = mkExe(t, other, "my-chrome")
			case "missing":
				explicit = filepath.Join(other, "nope")
			case "dir":
				explicit = other
			case "bare":
				explicit = "my-chrome"
			}
			got, err := Find(explicit)
			if tt.want == "" {
				if !errors.Is(err, ErrNoBrowser) || !errors.Is(err, errdefs.ErrUnavailable) {
					t.Fatalf("Find(%q) = %q, %v; want ErrNoBrowser (unavailable)", explicit, got, err)
				}
				return
			}
			if err != nil || filepath.Base(got) != tt.want {
				t.Fatalf("Find(%q) = %q, %v; want …/%s", explicit, got, err, tt.want)
			}
		})
	}
}

func TestSingletonCleanup(t *testing.T) {
	host, _ := os.Hostname()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		lockPID  func(t *testing.T, profile string) int // 0: no lock
		garbage  bool
		wantHeld bool
	}{
		{name: "held by live process naming the profile", wantHeld: true, lockPID: func(t *testing.T, profile string) int {
			return startHolder(t, "--type=browser", "--user-data-dir="+profile).Process.Pid
		}},
		{name: "stale (dead pid)", lockPID: func(*testing.T, string) int { return dead.Process.Pid }},
		{name: "live unrelated pid", lockPID: func(t *testing.T, profile string) int {
			return startHolder(t, "--user-data-dir="+profile+"-other").Process.Pid
		}},
		{name: "garbage lock", garbage: true},
		{name: "no lock"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			profile := t.TempDir()
			lock := filepath.Join(profile, "SingletonLock")
			var pid int
			switch {
			case tt.garbage:
				if err := os.Symlink("not-a-pid-here", lock); err != nil {
					t.Fatal(err)
				}
			case tt.lockPID != nil:
				pid = tt.lockPID(t, profile)
				if err := os.Symlink(host+"-"+strconv.Itoa(pid), lock); err != nil {
					t.Fatal(err)
				}
			}
			for _, n := range []string{"SingletonSocket", "SingletonCookie"} {
				if err := os.WriteFile(filepath.Join(profile, n), nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			gotPID, held := ProfileHolder(profile)
			if held != tt.wantHeld || (held && gotPID != pid) {
				t.Errorf("ProfileHolder() = %d, %v; want %d, %v", gotPID, held, pid, tt.wantHeld)
			}
			err := clearSingletons(profile)
			if tt.wantHeld {
				var inUse *ProfileInUseError
				if !errors.As(err, &inUse) || inUse.PID != pid || !errors.Is(err, ErrProfileInUse) {
					t.Fatalf("clearSingletons() = %v; want ProfileInUseError naming pid %d", err, pid)
				}
				if !strings.Contains(err.Error(), strconv.Itoa(pid)) {
					t.Errorf("error %q does not name pid %d", err, pid)
				}
			} else if err != nil {
				t.Fatalf("clearSingletons() = %v; want nil", err)
			}
			for _, n := range singletonFiles {
				_, err := os.Lstat(filepath.Join(profile, n))
				if exists := err == nil; exists != tt.wantHeld {
					t.Errorf("%s exists = %v; want %v", n, exists, tt.wantHeld)
				}
			}
		})
	}
}

func TestLaunchRefusesHeldProfile(t *testing.T) {
	profile := t.TempDir()
	holder := startHolder(t, "--user-data-dir="+profile)
	host, _ := os.Hostname()
	if err := os.Symlink(host+"-"+strconv.Itoa(holder.Process.Pid), filepath.Join(profile, "SingletonLock")); err != nil {
		t.Fatal(err)
	}
	starts := filepath.Join(t.TempDir(), "starts")
	bin := writeScript(t, "echo $$ >> '"+starts+"'\n")
	_, err := Launch(context.Background(), Options{Transport: TransportPort, Binary: bin, ProfileDir: profile, ReadyTimeout: time.Second, Log: testkit.Log(t)})
	var inUse *ProfileInUseError
	if !errors.As(err, &inUse) || inUse.PID != holder.Process.Pid || !errors.Is(err, ErrProfileInUse) || !errors.Is(err, errdefs.ErrConflict) {
		t.Fatalf("Launch on a held profile = %v; want ProfileInUseError (ErrProfileInUse) naming pid %d", err, holder.Process.Pid)
	}
	if pids := readPIDs(t, starts); len(pids) != 0 {
		t.Errorf("browser started %d time(s) on a held profile", len(pids))
	}
	if _, err := os.Stat(filepath.Join(profile, "Default", "Preferences")); err == nil {
		t.Errorf("Preferences written into a profile held by another browser")
	}
}

// keptOptions puts o on the pipe, this test binary its keeper (TestMain runs keeper.Main for "keep").
func keptOptions(t *testing.T, o Options) Options {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	o.Transport, o.Keeper, o.RunDir, o.Key = TransportPipe, []string{exe, "keep"}, t.TempDir(), "k"
	return o
}

// TestLaunchNeverReadyKillsGroup: a browser that never gets ready is killed with its group after each
// attempt, on a port and on the pipe (where its keeper has not named it yet).
func TestLaunchNeverReadyKillsGroup(t *testing.T) {
	for _, transport := range []Transport{TransportPort, TransportPipe} {
		t.Run(string(transport), func(t *testing.T) { testLaunchNeverReadyKillsGroup(t, transport) })
	}
}

func testLaunchNeverReadyKillsGroup(t *testing.T, transport Transport) {
	dir := t.TempDir()
	starts, helpers := filepath.Join(dir, "starts"), filepath.Join(dir, "helpers")
	bin := writeScript(t, `echo "attempt $$ starting" >&2
echo $$ >> '`+starts+`'
sleep 1000 &
echo $! >> '`+helpers+`'
wait
`)
	begin := time.Now()
	// Long enough for a keeper to start the script on a loaded machine: every attempt must have begun, so
	// that its group is there to be killed.
	o := Options{Transport: TransportPort, Binary: bin, ProfileDir: filepath.Join(dir, "p"), ReadyTimeout: time.Second, Log: testkit.Log(t)}
	if transport == TransportPipe {
		o = keptOptions(t, o)
	}
	_, err := Launch(context.Background(), o)
	var le *LaunchError
	if !errors.As(err, &le) || le.Attempts != 3 {
		t.Fatalf("Launch(never ready) = %v; want LaunchError after 3 attempts", err)
	}
	if !strings.Contains(err.Error(), "not ready within") || !strings.Contains(err.Error(), "starting") {
		t.Errorf("error %q should say not ready and include stderr", err)
	}
	if d := time.Since(begin); d > 15*time.Second {
		t.Errorf("Launch took %s; want about 3 × ReadyTimeout", d)
	}
	scripts, kids := readPIDs(t, starts), readPIDs(t, helpers)
	if len(scripts) != 3 {
		t.Fatalf("attempts started = %d; want 3", len(scripts))
	}
	if len(kids) != 3 {
		t.Fatalf("helpers started = %d; want 3", len(kids))
	}
	for _, pid := range scripts {
		if groupAlive(pid) {
			t.Errorf("process group %d still alive after Launch returned", pid)
		}
	}
	for _, pid := range append(scripts, kids...) {
		if isLive(pid) {
			t.Errorf("pid %d still alive after Launch returned", pid)
		}
	}
}

func TestLaunchExitsAtOnce(t *testing.T) {
	dir := t.TempDir()
	starts := filepath.Join(dir, "starts")
	bin := writeScript(t, `echo $$ >> '`+starts+`'
echo "boom: Missing X server or \$DISPLAY" >&2
exit 1
`)
	_, err := Launch(context.Background(), Options{Transport: TransportPort, Binary: bin, ProfileDir: filepath.Join(dir, "p"), ReadyTimeout: 5 * time.Second, Log: testkit.Log(t)})
	var le *LaunchError
	if !errors.As(err, &le) || le.Attempts != 3 || !errors.Is(err, ErrLaunch) || !errors.Is(err, ErrExited) {
		t.Fatalf("Launch(exits) = %v; want LaunchError (ErrExited) after 3 attempts", err)
	}
	if !strings.Contains(err.Error(), "boom: Missing X server") || !strings.Contains(err.Error(), "exit status 1") {
		t.Errorf("error %q should include the exit status and stderr", err)
	}
	if n := len(readPIDs(t, starts)); n != 3 {
		t.Errorf("attempts started = %d; want 3", n)
	}
}

// A Singleton file that cannot be cleared is the profile's fault (ErrProfileUnready), not a live holder's.
func TestLaunchProfileUnready(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "p")
	if err := os.MkdirAll(filepath.Join(profile, "SingletonLock", "stuck"), 0o700); err != nil {
		t.Fatal(err)
	}
	bin := writeScript(t, "exit 1\n")
	_, err := Launch(context.Background(), Options{Transport: TransportPort, Binary: bin, ProfileDir: profile, ReadyTimeout: 5 * time.Second, Log: testkit.Log(t)})
	if !errors.Is(err, ErrProfileUnready) || errors.Is(err, ErrProfileInUse) {
		t.Fatalf("Launch(SingletonLock a folder) = %v; want ErrProfileUnready", err)
	}
}

func TestLaunchCancelKillsGroup(t *testing.T) {
	dir := t.TempDir()
	starts, helpers := filepath.Join(dir, "starts"), filepath.Join(dir, "helpers")
	bin := writeScript(t, `echo $$ >> '`+starts+`'
sleep 1000 &
echo $! >> '`+helpers+`'
wait
`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Launch(ctx, Options{Transport: TransportPort, Binary: bin, ProfileDir: filepath.Join(dir, "p"), ReadyTimeout: time.Minute, Log: testkit.Log(t)})
		errc <- err
	}()
	testkit.WaitFor(t, 10*time.Second, "the helper to start", func() bool { return len(readPIDs(t, helpers)) == 1 })
	cancel()
	var err error
	select {
	case err = <-errc:
	case <-time.After(10 * time.Second):
		t.Fatal("Launch did not return after cancel")
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Launch after cancel = %v; want context.Canceled", err)
	}
	script, helper := readPIDs(t, starts)[0], readPIDs(t, helpers)[0]
	if groupAlive(script) || isLive(script) || isLive(helper) {
		t.Errorf("group %d (helper %d) still alive after a cancelled Launch", script, helper)
	}
	if n := len(readPIDs(t, starts)); n != 1 {
		t.Errorf("attempts after cancel = %d; want 1", n)
	}
}

func TestLaunchFakeBrowser(t *testing.T) {
	p := launchFake(t, nil)
	resp, err := http.Get(p.HTTPEndpoint() + "/json/version")
	if err != nil {
		t.Fatalf("GET /json/version: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), p.WSEndpoint()) {
		t.Errorf("/json/version = %s; want it to name %s", body, p.WSEndpoint())
	}
	info, ok := procid.Live(context.Background(), p.PID())
	if !ok || info.Start != p.StartTime() {
		t.Errorf("StartTime() = %d; process says %d (live %v)", p.StartTime(), info.Start, ok)
	}
	if p.Adopted() {
		t.Error("Adopted() = true for a launched browser")
	}
	if !slices.ContainsFunc(p.Stderr(), func(l string) bool { return strings.Contains(l, "DevTools listening") }) {
		t.Errorf("Stderr() = %q; want the browser's stderr", p.Stderr())
	}
	if pgid, _ := syscall.Getpgid(p.PID()); pgid != p.PID() {
		t.Errorf("browser pgid = %d; want its own group %d", pgid, p.PID())
	}
	if holder, held := ProfileHolder(p.ProfileDir()); !held || holder != p.PID() {
		t.Errorf("ProfileHolder() = %d, %v; want %d, true", holder, held, p.PID())
	}
	// A second launch on the same profile is refused while the first runs.
	_, err = Launch(context.Background(), Options{Transport: TransportPort, Binary: fakeBrowser(t, nil), ProfileDir: p.ProfileDir(), Log: testkit.Log(t)})
	if !errors.Is(err, ErrProfileInUse) {
		t.Errorf("second Launch on a running profile = %v; want ErrProfileInUse", err)
	}
}

func TestStopFake(t *testing.T) {
	tests := []struct {
		name   string
		env    map[string]string
		within time.Duration
	}{
		{name: "Browser.close", env: map[string]string{fakeHelperEnv: "1"}, within: closeBound},
		{name: "close hangs, SIGTERM works", env: map[string]string{fakeHelperEnv: "1", fakeCloseEnv: "hang"}, within: closeBound + termBound},
		{name: "close hangs, SIGTERM ignored", env: map[string]string{fakeHelperEnv: "1", fakeCloseEnv: "hang", fakeTermEnv: "ignore"}, within: closeBound + termBound + killBound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := launchFake(t, tt.env)
			helper := readPIDs(t, filepath.Join(p.ProfileDir(), "helper.pid"))[0]
			begin := time.Now()
			if err := p.Stop(context.Background()); err != nil {
				t.Fatalf("Stop() = %v", err)
			}
			if d := time.Since(begin); d > tt.within+time.Second {
				t.Errorf("Stop took %s; want within %s", d, tt.within)
			}
			if groupAlive(p.PID()) || isLive(helper) {
				t.Errorf("process group %d (helper %d) alive after Stop", p.PID(), helper)
			}
			select {
			case <-p.Done():
			default:
				t.Error("Done() not closed after Stop")
			}
			if err := p.Stop(context.Background()); err != nil {
				t.Errorf("second Stop() = %v; want nil", err)
			}
		})
	}
}

func TestStopCancelledCtxStillKills(t *testing.T) {
	p := launchFake(t, map[string]string{fakeCloseEnv: "hang", fakeTermEnv: "ignore"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	begin := time.Now()
	if err := p.Stop(ctx); err != nil {
		t.Fatalf("Stop(cancelled) = %v", err)
	}
	if d := time.Since(begin); d > killBound {
		t.Errorf("Stop(cancelled) took %s; want at most %s", d, killBound)
	}
	if groupAlive(p.PID()) {
		t.Errorf("group %d alive after Stop", p.PID())
	}
}

func TestDoneOnKill(t *testing.T) {
	p := launchFake(t, map[string]string{fakeHelperEnv: "1"})
	helper := readPIDs(t, filepath.Join(p.ProfileDir(), "helper.pid"))[0]
	if err := syscall.Kill(p.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done() not closed after kill -9")
	}
	if p.ExitErr() == nil {
		t.Error("ExitErr() = nil after kill -9")
	}
	// The helper must not outlive its browser.
	testkit.WaitFor(t, 5*time.Second, "the helper to die with its browser", func() bool { return !isLive(helper) })
}

func TestAdopt(t *testing.T) {
	p := launchFake(t, map[string]string{fakeHelperEnv: "1"})
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	unrelated := startHolder(t, "--user-data-dir="+t.TempDir())
	noCDP := t.TempDir()
	noCDPHolder := startHolder(t, "--user-data-dir="+noCDP)
	noCDPInfo, _ := procid.Live(context.Background(), noCDPHolder.Process.Pid)
	unrelatedInfo, _ := procid.Live(context.Background(), unrelated.Process.Pid)

	tests := []struct {
		name    string
		pid     int
		start   int64
		profile string
		want    string // substring of the error
	}{
		{name: "wrong start time", pid: p.PID(), start: p.StartTime() - 1000, profile: p.ProfileDir(), want: "start time"},
		{name: "command line lacks the profile", pid: unrelated.Process.Pid, start: unrelatedInfo.Start, profile: p.ProfileDir(), want: "command line"},
		{name: "other profile", pid: p.PID(), start: p.StartTime(), profile: t.TempDir(), want: "command line"},
		{name: "dead pid", pid: dead.Process.Pid, start: p.StartTime(), profile: p.ProfileDir(), want: "not running"},
		{name: "no CDP", pid: noCDPHolder.Process.Pid, start: noCDPInfo.Start, profile: noCDP, want: "CDP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Adopt(context.Background(), tt.pid, tt.start, tt.profile, testkit.Log(t))
			if err == nil {
				got.Release()
				t.Fatalf("Adopt(%d, %d, %s) = ok; want an error about %s", tt.pid, tt.start, tt.profile, tt.want)
			}
			if !errors.Is(err, ErrNotAdoptable) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Adopt(%d) = %v; want ErrNotAdoptable about %q", tt.pid, err, tt.want)
			}
		})
	}

	// Stopping an adopted browser is logged with the logger Adopt was given.
	var logged bytes.Buffer
	log := zerolog.New(io.MultiWriter(&logged, zerolog.NewTestWriter(t)))
	a, err := Adopt(context.Background(), p.PID(), p.StartTime(), p.ProfileDir(), log)
	if err != nil {
		t.Fatalf("Adopt(own browser) = %v", err)
	}
	if !a.Adopted() || a.PID() != p.PID() || a.WSEndpoint() != p.WSEndpoint() || a.HTTPEndpoint() != p.HTTPEndpoint() {
		t.Errorf("adopted = {adopted %v pid %d ws %s http %s}; want the launched browser's", a.Adopted(), a.PID(), a.WSEndpoint(), a.HTTPEndpoint())
	}
	helper := readPIDs(t, filepath.Join(p.ProfileDir(), "helper.pid"))[0]
	if err := a.Stop(context.Background()); err != nil {
		t.Fatalf("Stop(adopted) = %v", err)
	}
	select {
	case <-a.Done():
	case <-time.After(5 * time.Second):
		t.Error("adopted Done() not closed after Stop")
	}
	if groupAlive(p.PID()) || isLive(helper) {
		t.Errorf("group %d alive after stopping the adopted browser", p.PID())
	}
	wantPID := `"pid":` + strconv.Itoa(p.PID())
	if got := logged.String(); !strings.Contains(got, `"message":"chromium stopped by`) || !strings.Contains(got, wantPID) || !strings.Contains(got, `"profile":`) {
		t.Errorf("Stop(adopted) logged %q; want a \"chromium stopped by\" line with %s and the profile", got, wantPID)
	}
	a.Release()
}

func TestAdoptReleaseStopsWatching(t *testing.T) {
	p := launchFake(t, nil)
	a, err := Adopt(context.Background(), p.PID(), p.StartTime(), p.ProfileDir(), testkit.Log(t))
	if err != nil {
		t.Fatal(err)
	}
	a.Release()
	a.Release()
	select {
	case <-a.Done():
		t.Error("Done() closed by Release on a running browser")
	default:
	}
}
