//go:build integration

package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"vibebrowser/integration/testkit"
)

// The terminal probe (SPEC §20): a root shell on a terminal of its own is the launcher. ttyprobe, run by
// that shell directly, types `touch MARKER` into it (TIOCSTI) and the shell runs it: the control. Run
// through `vibe-browser agent`, as a store's agent user and as root, the same pushes land on the agent's
// own pty, and the marker never appears while the shell goes on reading its terminal. Through the relay a
// line typed on the launcher's terminal reaches the agent, and so does a new window size.

// legacyTIOCSTI is the sysctl that lets a process without CAP_SYS_ADMIN push input into its controlling
// terminal (Linux 6.2 and later; 0 forbids it).
const legacyTIOCSTI = "/proc/sys/dev/tty/legacy_tiocsti"

// pushedElsewhere is a line of ttyprobe's that says it typed into a terminal other than its own.
var pushedElsewhere = regexp.MustCompile(`TIOCSTI /dev/pts/[0-9]+: done`)

func TestAgentTerminal(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("the terminal probe runs vibe-browser agent as root with a store's agent user; CI runs as root")
	}
	controlShown := allowTIOCSTI(t)
	agent := testkit.SystemUser(t, agentUserA)
	testkit.SystemUser(t, browserUser)
	bins := reachableBinaries(t)
	probe := buildTTYProbe(t)
	home := boundaryHome(t)
	m := startManagerWith(t, bins, home)
	m.cli("store", "add", "Acme", "--agent-user", agentUserA, "--browser-user", browserUser)
	markers := t.TempDir() // root's, 0700: only the root shell can make a marker in it, never the agent user

	sh := startLauncherShell(t, m.env)
	if controlShown {
		control := filepath.Join(markers, "control")
		sh.run(t, probe+" -push "+control+"; echo control-exit=$((0+$?))", "control-exit=0")
		testkit.WaitFor(t, 10*time.Second, "the control's pushed command to run in the launcher's shell", func() bool {
			_, err := os.Stat(control)
			return err == nil
		})
	}

	for i, c := range []struct {
		name, which, task, sweep string
		piped                    bool // the launcher's stdio is no terminal: the agent gets none at all
	}{
		{name: "agent user", which: "--store acme", task: "7e77e000-0000-4000-8000-000000000001", sweep: " -sweep"},
		// The store-less browser has no agent user here: its agent runs as root, which could open any
		// terminal (so no sweep), and still gets none of the launcher's through vibe-browser agent.
		{name: "root", which: "--web", task: "7e77e000-0000-4000-8000-000000000002"},
		{name: "no terminal", which: "--store acme", task: "7e77e000-0000-4000-8000-000000000004", sweep: " -sweep", piped: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			marker := filepath.Join(markers, strings.ReplaceAll(c.name, " ", "-"))
			line := fmt.Sprintf("%s --home %s agent %s --task %s -- %s -push %s%s -exit 7", bins.vibe, home, c.which, c.task,
				probe, marker, c.sweep)
			if c.piped {
				line += " </dev/null 2>&1 | cat; echo agent-exit=${PIPESTATUS[0]}"
			} else {
				line += "; echo agent-exit=$((0+$?))"
			}
			shown := sh.run(t, line, "agent-exit=7")
			switch {
			case c.piped:
				// Its own session has no terminal: /dev/tty is no device, and its stdio none.
				if !strings.Contains(shown, "open /dev/tty: no such device or address") || strings.Contains(shown, ": done") {
					t.Errorf("the probe without a terminal reached one; the shell showed:\n%s", shown)
				}
			case !strings.Contains(shown, "stdin=/dev/pts/") || strings.Contains(shown, "stdin="+sh.tty+" "):
				t.Errorf("the probe's stdin was not a pty of its own (the launcher's is %s); the shell showed:\n%s", sh.tty, shown)
			case !strings.Contains(shown, "TIOCSTI fd 0: done") || !strings.Contains(shown, "TIOCSTI /dev/tty: done"):
				// Its pushes land, on a terminal: its own.
				t.Errorf("the probe's pushes on its stdin and /dev/tty did not land on a terminal; the shell showed:\n%s", shown)
			}
			if m := pushedElsewhere.FindString(shown); m != "" {
				t.Errorf("the probe pushed into another terminal (%s); the shell showed:\n%s", m, shown)
			}
			// The shell reads on: a command typed now runs after anything pushed into its terminal before.
			sh.run(t, fmt.Sprintf("echo shell-reads-on-$((40+%d))", i), fmt.Sprintf("shell-reads-on-%d", 40+i))
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s exists (%v): a command the agent pushed ran in the launcher's root shell", marker, err)
				}
			}
		})
	}

	t.Run("interactive", func(t *testing.T) {
		setPTYSize(t, sh.master, 30, 90)
		sh.typeLine(t, fmt.Sprintf("%s --home %s agent --store acme --task 7e77e000-0000-4000-8000-000000000003 -- %s -read; echo agent-exit=$((0+$?))",
			bins.vibe, home, probe))
		sh.waitFor(t, "ttyprobe: size 30x90, waiting for a line")
		setPTYSize(t, sh.master, 40, 120) // the kernel signals SIGWINCH to the launcher's foreground: agent
		sh.typeLine(t, "typed-through-the-relay")
		sh.waitFor(t, `ttyprobe: read "typed-through-the-relay" done`)
		sh.waitFor(t, "ttyprobe: size now 40x120")
		sh.waitFor(t, "agent-exit=0")
		// The agent's terminal is its user's: it can open it by name (ssh, gpg), and no one else can.
		if !regexp.MustCompile(`ttyprobe: uid=` + strconv.Itoa(agent.UID) + ` stdin=/dev/pts/[0-9]+ owned by ` +
			strconv.Itoa(agent.UID)).MatchString(sh.out.String()) {
			t.Errorf("the probe did not run as %s on a pty of its own; the shell showed:\n%s", agentUserA, sh.out.String())
		}
	})
}

// allowTIOCSTI makes TIOCSTI work on a controlling terminal for the test's length (restoring the sysctl
// after), so that the control shows what the probe does without vibe-browser agent. It reports whether it
// does: where the sysctl cannot be set, only the agent's side is shown.
func allowTIOCSTI(t *testing.T) bool {
	t.Helper()
	b, err := os.ReadFile(legacyTIOCSTI)
	if errors.Is(err, os.ErrNotExist) {
		return true // a kernel before 6.2: TIOCSTI on one's own terminal is always allowed
	}
	if err != nil {
		t.Logf("cannot read %s (%v): the control cannot be shown", legacyTIOCSTI, err)
		return false
	}
	was := strings.TrimSpace(string(b))
	if was == "1" {
		return true
	}
	if err := os.WriteFile(legacyTIOCSTI, []byte("1"), 0o644); err != nil {
		t.Logf("%s is %s and cannot be set (%v): the control cannot be shown", legacyTIOCSTI, was, err)
		return false
	}
	t.Cleanup(func() {
		if err := os.WriteFile(legacyTIOCSTI, []byte(was), 0o644); err != nil {
			t.Errorf("restore %s to %s: %v", legacyTIOCSTI, was, err)
		}
	})
	return true
}

var (
	ttyProbeOnce sync.Once
	ttyProbePath string
	ttyProbeErr  error
)

// buildTTYProbe builds ttyprobe once per test binary, where every user may run it.
func buildTTYProbe(t *testing.T) string {
	t.Helper()
	ttyProbeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "vibe-ttyprobe-")
		if err == nil {
			err = os.Chmod(dir, 0o755)
		}
		if err != nil {
			ttyProbeErr = err
			return
		}
		ttyProbePath = filepath.Join(dir, "ttyprobe")
		if out, err := exec.Command("go", "build", "-o", ttyProbePath, "vibebrowser/integration/ttyprobe").CombinedOutput(); err != nil {
			ttyProbeErr = fmt.Errorf("build ttyprobe: %v\n%s", err, out)
		}
	})
	if ttyProbeErr != nil {
		t.Fatal(ttyProbeErr)
	}
	return ttyProbePath
}

// launcherShell is an interactive root bash on a terminal of its own (the leader of its session, the pty
// its controlling terminal): a person's shell that launches agents. The test types on the pty's master and
// reads what the shell shows from it.
type launcherShell struct {
	tty    string // the pty's slave, the shell's terminal
	master *os.File
	out    *syncBuffer
	seen   int // how far into out the waits have found what they waited for
}

// startLauncherShell starts the shell with env; it is killed at cleanup.
func startLauncherShell(t *testing.T, env []string) *launcherShell {
	t.Helper()
	master, slave := openTestPTY(t)
	setPTYSize(t, master, 24, 80)
	// No line editing: the shell reads its terminal's lines as they come, pushed or typed.
	cmd := exec.Command("bash", "--norc", "--noprofile", "--noediting", "-i")
	cmd.Env = append(append([]string{}, env...), "PS1=launcher$ ", "TERM=dumb")
	cmd.Dir = "/"
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	sh := &launcherShell{tty: slave.Name(), master: master, out: &syncBuffer{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			sh.out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		master.Close()
		wg.Wait()
		if t.Failed() {
			t.Logf("the launcher's terminal showed:\n%s", sh.out.String())
		}
	})
	sh.waitFor(t, "launcher$ ")
	return sh
}

// typeLine types line and Enter on the shell's terminal.
func (sh *launcherShell) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := sh.master.Write([]byte(line + "\r")); err != nil {
		t.Fatal(err)
	}
}

// run types line and waits for want on the terminal after it; it returns what the terminal showed from
// the line to want.
func (sh *launcherShell) run(t *testing.T, line, want string) string {
	t.Helper()
	from := len(sh.out.String())
	sh.typeLine(t, line)
	sh.waitFor(t, want)
	return sh.out.String()[from:sh.seen]
}

// waitFor waits for want on the terminal after what the last waitFor found.
func (sh *launcherShell) waitFor(t *testing.T, want string) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("%q on the launcher's terminal", want), func() bool {
		out := sh.out.String()
		i := strings.Index(out[sh.seen:], want)
		if i >= 0 {
			sh.seen += i + len(want)
		}
		return i >= 0
	})
}

// openTestPTY opens a pty: its master (the test's side, pollable so that closing it ends a read) and its
// slave.
func openTestPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), s
}

// setPTYSize sets the pty's window size through its master (never master.Fd(), which would make it blocking).
func setPTYSize(t *testing.T, master *os.File, rows, cols uint16) {
	t.Helper()
	rc, err := master.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	rc.Control(func(fd uintptr) {
		err = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	if err != nil {
		t.Fatal(err)
	}
}
