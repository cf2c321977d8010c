package reaper

import (
	"context"
	"errors"
	"io/fs"
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

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// daemonArgv0 is the command line a browser-use 0.13 daemon shows; the fakes take it with exec -a.
const daemonArgv0 = "python3 -m browser_harness.daemon"

// runtimeDir returns a fresh runtime dir claimed by this "manager".
func runtimeDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "r")
	owned, err := Claim(dir)
	if err != nil || !owned {
		t.Fatalf("Claim(%s) = %v, %v; want true, nil", dir, owned, err)
	}
	return dir
}

// child is a process a test started; exited is closed once it has been waited for.
type child struct {
	pid    int
	exited chan struct{}
}

func (c *child) alive() bool {
	select {
	case <-c.exited:
		return false
	default:
		return true
	}
}

// spawn starts bash -c script and kills and reaps it when the test ends. With argv0 set it waits until the
// script has exec'd into the program that shows argv0, so the command line is final. An unreaped child stays
// a zombie once it exits, as a daemon does under an init that never reaps.
func spawn(t *testing.T, script, argv0 string, reap bool) *child {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{pid: cmd.Process.Pid, exited: make(chan struct{})}
	waited := make(chan struct{})
	release := make(chan struct{})
	go func() {
		if !reap {
			<-release
		}
		cmd.Wait()
		close(c.exited)
		close(waited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		close(release)
		<-waited
	})
	if argv0 != "" {
		testkit.WaitFor(t, 5*time.Second, "exec of "+argv0, func() bool {
			data, err := os.ReadFile("/proc/" + strconv.Itoa(c.pid) + "/cmdline")
			return err == nil && strings.HasPrefix(string(data), argv0+"\x00")
		})
	}
	return c
}

// gone reports whether the child's program has ended: reaped, or a zombie waiting to be.
func (c *child) gone() bool {
	if !c.alive() {
		return true
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(c.pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name: "pid (comm) S ...".
	i := strings.LastIndexByte(string(data), ')')
	return i >= 0 && i+2 < len(data) && data[i+2] == 'Z'
}

// Kinds of pid file a test lays out.
type kind int

const (
	daemon       kind = iota // a live fake daemon
	stubborn                 // a live fake daemon that ignores SIGTERM
	dead                     // a pid no process has any more
	unrelated                // a live process whose command line is not a daemon's
	reused                   // a live fake daemon that started after the pid file was written
	garbage                  // an old pid file that holds no pid
	youngGarbage             // a pid file that holds no pid yet, just written
	unreaped                 // a live fake daemon nobody reaps: once killed it stays a zombie
	zombie                   // a fake daemon that exited and was never reaped
)

// layout creates bu-<name>.pid and .sock for one kind and returns the process behind it, if any.
func layout(t *testing.T, dir, name string, k kind) *child {
	t.Helper()
	var c *child
	pid := ""
	switch k {
	case daemon, reused:
		c = spawn(t, `exec -a "`+daemonArgv0+`" sleep 300`, daemonArgv0, true)
	case unreaped:
		c = spawn(t, `exec -a "`+daemonArgv0+`" sleep 300`, daemonArgv0, false)
	case zombie:
		c = spawn(t, `exec -a "`+daemonArgv0+`" sleep 300`, daemonArgv0, false)
		if err := syscall.Kill(c.pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "zombie", c.gone)
	case stubborn:
		// An ignored signal stays ignored across exec, so sleep inherits the trap.
		c = spawn(t, `trap "" TERM; exec -a "`+daemonArgv0+`" sleep 300`, daemonArgv0, true)
	case unrelated:
		c = spawn(t, `exec sleep 300`, "sleep", true)
	case dead:
		gone := spawn(t, `exit 0`, "", true)
		<-gone.exited
		pid = strconv.Itoa(gone.pid)
	case garbage, youngGarbage:
		pid = "not a pid"
	}
	if c != nil {
		pid = strconv.Itoa(c.pid)
	}
	pidPath := filepath.Join(dir, "bu-"+name+".pid")
	if err := os.WriteFile(pidPath, []byte(pid+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bu-"+name+".sock"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if k == reused || k == garbage {
		old := time.Now().Add(-time.Hour)
		if err := os.Chtimes(pidPath, old, old); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func activeSet(tasks ...string) func(string) bool {
	return func(task8 string) bool { return slices.Contains(tasks, task8) }
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func sameNames(a, b []string) bool { return slices.Equal(sorted(a), sorted(b)) }

func TestPass(t *testing.T) {
	type file struct {
		name string
		kind kind
	}
	tests := []struct {
		name        string
		slugs       []string
		active      []string
		files       []file
		wantKilled  []string
		wantRemoved []string
		wantKept    []string
	}{
		{
			name:       "orphan of an inactive task is killed",
			slugs:      []string{"shop"},
			files:      []file{{"shop-a1b2c3d4", daemon}},
			wantKilled: []string{"shop-a1b2c3d4"},
		},
		{
			name:       "orphan ignoring SIGTERM is killed with SIGKILL",
			slugs:      []string{"shop"},
			files:      []file{{"shop-a1b2c3d4", stubborn}},
			wantKilled: []string{"shop-a1b2c3d4"},
		},
		{
			name:       "active task keeps its daemons, inactive loses its workers",
			slugs:      []string{"shop"},
			active:     []string{"a1b2c3d4"},
			files:      []file{{"shop-a1b2c3d4", daemon}, {"shop-a1b2c3d4-w2", daemon}, {"shop-0000ffff-w1", daemon}},
			wantKilled: []string{"shop-0000ffff-w1"},
			wantKept:   []string{"shop-a1b2c3d4", "shop-a1b2c3d4-w2"},
		},
		{
			name:        "stale pid file of a dead daemon is removed with its socket",
			slugs:       []string{"shop"},
			active:      []string{"a1b2c3d4"},
			files:       []file{{"shop-a1b2c3d4", dead}, {"shop", dead}},
			wantRemoved: []string{"shop-a1b2c3d4", "shop"},
		},
		{
			name:        "pid of an unrelated live program kills nothing",
			slugs:       []string{"shop"},
			files:       []file{{"shop-a1b2c3d4", unrelated}},
			wantRemoved: []string{"shop-a1b2c3d4"},
		},
		{
			name:        "pid file older than its process (pid reuse) kills nothing",
			slugs:       []string{"shop"},
			files:       []file{{"shop-a1b2c3d4", reused}},
			wantRemoved: []string{"shop-a1b2c3d4"},
		},
		{
			name:     "names without a task tail are kept",
			slugs:    []string{"shop"},
			files:    []file{{"shop", daemon}, {"shop-aux", daemon}, {"web", daemon}},
			wantKept: []string{"shop", "shop-aux", "web"},
		},
		{
			name:       "CJK store slug is not a task tail",
			slugs:      []string{"store-0b0d4497", "store"},
			files:      []file{{"store-0b0d4497", daemon}, {"store-0b0d4497-aux", daemon}, {"store-0b0d4497-a1b2c3d4", daemon}},
			wantKilled: []string{"store-0b0d4497-a1b2c3d4"},
			wantKept:   []string{"store-0b0d4497", "store-0b0d4497-aux"},
		},
		{
			name:       "killed daemon left a zombie counts as gone",
			slugs:      []string{"shop"},
			files:      []file{{"shop-a1b2c3d4", unreaped}},
			wantKilled: []string{"shop-a1b2c3d4"},
		},
		{
			name:        "pid file of a zombie is stale",
			slugs:       []string{"shop"},
			files:       []file{{"shop-a1b2c3d4", zombie}},
			wantRemoved: []string{"shop-a1b2c3d4"},
		},
		{
			name:       "web task daemon of an inactive task is killed",
			files:      []file{{"web-a1b2c3d4", daemon}, {"web-a1b2c3d4-w1", daemon}},
			wantKilled: []string{"web-a1b2c3d4", "web-a1b2c3d4-w1"},
		},
		{
			name:     "unknown names are kept",
			slugs:    []string{"shop"},
			files:    []file{{"gone-store-a1b2c3d4", daemon}, {"sess.ion", daemon}},
			wantKept: []string{"gone-store-a1b2c3d4", "sess.ion"},
		},
		{
			name:        "unreadable pid file is removed once old, left alone while young",
			slugs:       []string{"shop"},
			files:       []file{{"shop-a1b2c3d4", garbage}, {"shop-0000ffff", youngGarbage}},
			wantRemoved: []string{"shop-a1b2c3d4"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := runtimeDir(t)
			procs := map[string]*child{}
			for _, f := range tt.files {
				procs[f.name] = layout(t, dir, f.name, f.kind)
			}
			var asked []string
			cfg := Config{
				Dir:   dir,
				Slugs: func() []string { return tt.slugs },
				Active: func(task8 string) bool {
					asked = append(asked, task8)
					return activeSet(tt.active...)(task8)
				},
				TermWait: 300 * time.Millisecond,
				Log:      testkit.Log(t),
			}
			res, err := Pass(context.Background(), cfg)
			if err != nil {
				t.Fatalf("Pass: %v", err)
			}
			if !sameNames(res.Killed, tt.wantKilled) || !sameNames(res.Removed, tt.wantRemoved) || !sameNames(res.Kept, tt.wantKept) {
				t.Fatalf("Pass = killed %q removed %q kept %q; want killed %q removed %q kept %q",
					res.Killed, res.Removed, res.Kept, tt.wantKilled, tt.wantRemoved, tt.wantKept)
			}
			for _, f := range tt.files {
				gone := slices.Contains(tt.wantKilled, f.name) || slices.Contains(tt.wantRemoved, f.name)
				for _, ext := range []string{".pid", ".sock"} {
					if got := exists(t, filepath.Join(dir, "bu-"+f.name+ext)); got == gone {
						t.Errorf("bu-%s%s exists = %v after the pass; want %v", f.name, ext, got, !gone)
					}
				}
				c := procs[f.name]
				if c == nil {
					continue
				}
				if slices.Contains(tt.wantKilled, f.name) {
					testkit.WaitFor(t, 5*time.Second, "killed daemon "+f.name+" to end", c.gone)
				} else if f.kind != zombie && c.gone() {
					t.Errorf("process of %s (pid %d) died; the pass must not kill it", f.name, c.pid)
				}
			}
			for _, task8 := range asked {
				if !slices.ContainsFunc(tt.files, func(f file) bool { return strings.Contains(f.name, task8) }) {
					t.Errorf("Active(%q) asked about a task no daemon carries", task8)
				}
			}
		})
	}
}

// TestPassNotOwned: a dir without the marker (an inherited BH_RUNTIME_DIR) is refused and left as it is.
func TestPassNotOwned(t *testing.T) {
	dir := t.TempDir()
	orphan := layout(t, dir, "shop-a1b2c3d4", daemon)
	layout(t, dir, "shop-0000ffff", dead)
	before := listDir(t, dir)
	cfg := Config{Dir: dir, Slugs: func() []string { return []string{"shop"} }, Active: activeSet(), Log: testkit.Log(t)}
	for _, fn := range []struct {
		name string
		run  func() (Result, error)
	}{
		{"Pass", func() (Result, error) { return Pass(context.Background(), cfg) }},
		{"StopTask", func() (Result, error) { return StopTask(context.Background(), cfg, "a1b2c3d4") }},
	} {
		res, err := fn.run()
		if !errors.Is(err, ErrNotOwned) {
			t.Errorf("%s(unmarked dir) = %v; want ErrNotOwned", fn.name, err)
		}
		if len(res.Killed)+len(res.Removed)+len(res.Kept) != 0 {
			t.Errorf("%s(unmarked dir) = %+v; want an empty result", fn.name, res)
		}
	}
	if after := listDir(t, dir); !slices.Equal(before, after) {
		t.Errorf("unmarked dir changed: %q → %q", before, after)
	}
	if !orphan.alive() {
		t.Error("a daemon in an unmarked dir was killed")
	}
	if _, err := Pass(context.Background(), Config{Dir: filepath.Join(dir, "missing"), Active: activeSet()}); err == nil {
		t.Error("Pass(missing dir) = nil; want an error")
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestPassMaxKills: a pass signals at most MaxKills daemons; the next pass takes the rest.
func TestPassMaxKills(t *testing.T) {
	dir := runtimeDir(t)
	names := []string{"shop-00000001", "shop-00000002", "shop-00000003", "shop-00000004", "shop-00000005"}
	procs := map[string]*child{}
	for _, n := range names {
		procs[n] = layout(t, dir, n, daemon)
	}
	cfg := Config{Dir: dir, Slugs: func() []string { return []string{"shop"} }, Active: activeSet(),
		MaxKills: 2, TermWait: time.Second, Log: testkit.Log(t)}
	var all []string
	for i, want := range []int{2, 2, 1, 0} {
		res, err := Pass(context.Background(), cfg)
		if err != nil {
			t.Fatalf("pass %d: %v", i, err)
		}
		if len(res.Killed) != want {
			t.Fatalf("pass %d killed %q; want %d daemons", i, res.Killed, want)
		}
		all = append(all, res.Killed...)
		testkit.WaitFor(t, 5*time.Second, "killed daemons reaped", func() bool {
			n := 0
			for _, c := range procs {
				if c.alive() {
					n++
				}
			}
			return n == len(names)-len(all)
		})
	}
	if !sameNames(all, names) {
		t.Errorf("passes killed %q; want %q", all, names)
	}
}

// TestPassMaxTime: once the time bound is spent, the remaining pid files wait for the next pass.
func TestPassMaxTime(t *testing.T) {
	dir := runtimeDir(t)
	first := layout(t, dir, "shop-00000001", daemon)
	second := layout(t, dir, "shop-00000002", daemon)
	cfg := Config{
		Dir:   dir,
		Slugs: func() []string { return []string{"shop"} },
		// A slow state lookup uses up the whole bound on the first daemon.
		Active:   func(string) bool { time.Sleep(150 * time.Millisecond); return false },
		MaxTime:  100 * time.Millisecond,
		TermWait: time.Second,
		Log:      testkit.Log(t),
	}
	res, err := Pass(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Killed, []string{"shop-00000001"}) {
		t.Fatalf("Pass killed %q; want only the first daemon", res.Killed)
	}
	<-first.exited
	if !second.alive() || !exists(t, filepath.Join(dir, "bu-shop-00000002.pid")) {
		t.Error("the daemon past the time bound was touched")
	}
}

// TestStopTask: only the named task's daemons go (main, workers, web), whatever Active says.
func TestStopTask(t *testing.T) {
	dir := runtimeDir(t)
	mine := []string{"shop-a1b2c3d4", "shop-a1b2c3d4-w1", "shop-a1b2c3d4-w2", "web-a1b2c3d4", "store-0b0d4497-a1b2c3d4"}
	others := []string{"shop", "shop-aux", "shop-0000ffff", "web", "store-0b0d4497", "a1b2c3d4"}
	procs := map[string]*child{}
	for _, n := range append(slices.Clone(mine), others...) {
		procs[n] = layout(t, dir, n, daemon)
	}
	layout(t, dir, "shop-0000ffff-w1", dead) // a stale file of another task: not StopTask's business
	cfg := Config{
		Dir:      dir,
		Slugs:    func() []string { return []string{"shop", "store-0b0d4497"} },
		Active:   activeSet("a1b2c3d4", "0000ffff"),
		TermWait: time.Second,
		Log:      testkit.Log(t),
	}
	res, err := StopTask(context.Background(), cfg, "A1B2C3D4")
	if err != nil {
		t.Fatal(err)
	}
	if !sameNames(res.Killed, mine) || len(res.Removed) != 0 || len(res.Kept) != 0 {
		t.Fatalf("StopTask = %+v; want killed %q only", res, mine)
	}
	for _, n := range mine {
		select {
		case <-procs[n].exited:
		case <-time.After(5 * time.Second):
			t.Errorf("daemon %s still running after StopTask", n)
		}
	}
	for _, n := range others {
		if !procs[n].alive() {
			t.Errorf("StopTask killed %s, a daemon of another task or none", n)
		}
	}
	if !exists(t, filepath.Join(dir, "bu-shop-0000ffff-w1.pid")) {
		t.Error("StopTask removed another task's stale pid file")
	}
	if _, err := StopTask(context.Background(), cfg, "a1b2"); err == nil {
		t.Error("StopTask(short prefix) = nil; want an error")
	}
}

func TestPassNeedsActive(t *testing.T) {
	if _, err := Pass(context.Background(), Config{Dir: runtimeDir(t)}); err == nil {
		t.Error("Pass without Active = nil; want an error (a nil answer would stop every task's daemons)")
	}
}

func TestPassCancelled(t *testing.T) {
	dir := runtimeDir(t)
	orphan := layout(t, dir, "shop-a1b2c3d4", daemon)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Pass(ctx, Config{Dir: dir, Slugs: func() []string { return []string{"shop"} }, Active: activeSet(), Log: testkit.Log(t)})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Pass(cancelled) = %v; want context.Canceled", err)
	}
	if !orphan.alive() {
		t.Error("a cancelled pass killed a daemon")
	}
}

func TestSignalIfChecksIdentity(t *testing.T) {
	d := spawn(t, `exec -a "`+daemonArgv0+`" sleep 300`, daemonArgv0, true)
	p, ok := inspect(d.pid)
	if !ok || !p.daemon {
		t.Fatalf("inspect(fake daemon) = %+v, %v; want a live daemon", p, ok)
	}
	if err := signalIf(d.pid, p.start-1000, os.Getuid(), syscall.SIGKILL); !errors.Is(err, errGone) {
		t.Errorf("signalIf(wrong start time) = %v; want errGone", err)
	}
	if !d.alive() {
		t.Fatal("signalIf signalled a process whose start time differs")
	}
	plain := spawn(t, `exec sleep 300`, "sleep", true)
	pp, _ := inspect(plain.pid)
	if err := signalIf(plain.pid, pp.start, os.Getuid(), syscall.SIGKILL); !errors.Is(err, errGone) {
		t.Errorf("signalIf(not a daemon) = %v; want errGone", err)
	}
	if err := signalIf(d.pid, p.start, os.Getuid()+1, syscall.SIGKILL); !errors.Is(err, errGone) {
		t.Errorf("signalIf(another user's) = %v; want errGone", err)
	}
	if err := signalIf(d.pid, p.start, os.Getuid(), syscall.SIGKILL); err != nil {
		t.Fatalf("signalIf(daemon) = %v", err)
	}
	<-d.exited
	if err := signalIf(d.pid, p.start, os.Getuid(), syscall.SIGKILL); !errors.Is(err, errGone) {
		t.Errorf("signalIf(exited) = %v; want errGone", err)
	}
}

func TestClaim(t *testing.T) {
	t.Run("new dir is created with the marker", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "home", "r")
		owned, err := Claim(dir)
		if err != nil || !owned {
			t.Fatalf("Claim(new) = %v, %v; want true, nil", owned, err)
		}
		fi, err := os.Stat(dir)
		if err != nil || fi.Mode().Perm() != 0o700 {
			t.Fatalf("runtime dir mode = %v, %v; want 0700", fi.Mode().Perm(), err)
		}
		if !exists(t, filepath.Join(dir, MarkerName)) {
			t.Fatal("marker missing")
		}
		if owned, err := Claim(dir); err != nil || !owned {
			t.Errorf("Claim(own dir again) = %v, %v; want true, nil", owned, err)
		}
	})
	t.Run("existing dir without marker is not claimed", func(t *testing.T) {
		dir := t.TempDir()
		owned, err := Claim(dir)
		if err != nil || owned {
			t.Fatalf("Claim(foreign) = %v, %v; want false, nil", owned, err)
		}
		if exists(t, filepath.Join(dir, MarkerName)) {
			t.Error("Claim wrote a marker into a foreign dir")
		}
	})
	t.Run("marker that is not a file does not count", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, MarkerName), 0o700); err != nil {
			t.Fatal(err)
		}
		if owned, err := Claim(dir); err != nil || owned {
			t.Errorf("Claim(marker dir) = %v, %v; want false, nil", owned, err)
		}
	})
	t.Run("a file in the way is an error", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "r")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if owned, err := Claim(path); err == nil || owned {
			t.Errorf("Claim(file) = %v, %v; want false and an error", owned, err)
		}
	})
}
