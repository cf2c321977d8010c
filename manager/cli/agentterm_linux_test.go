package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"vibebrowser/integration/testkit"
)

// agentChildEnv set makes the test binary the agent of TestAgentTerminalRelay (TestAgentTerminalChild).
const agentChildEnv = "VIBE_AGENTTERM_CHILD"

func TestOpenPTY(t *testing.T) {
	master, slave, err := openPTY()
	if err != nil {
		t.Fatalf("openPTY() = %v", err)
	}
	defer master.Close()
	defer slave.Close()
	if !strings.HasPrefix(slave.Name(), "/dev/pts/") || !term.IsTerminal(int(slave.Fd())) {
		t.Errorf("openPTY's slave %s is not a /dev/pts terminal", slave.Name())
	}
	var n uint32
	withFd(master, func(fd int) (err error) { n, err = unix.IoctlGetUint32(fd, unix.TIOCGPTN); return err })
	if want := fmt.Sprintf("/dev/pts/%d", n); slave.Name() != want {
		t.Errorf("slave %s; want the master's %s", slave.Name(), want)
	}
	if err := setWinsize(master, 33, 101); err != nil {
		t.Fatal(err)
	}
	if rows, cols, err := winsize(slave); err != nil || rows != 33 || cols != 101 {
		t.Errorf("winsize(slave) = %d×%d, %v; want 33×101, as set on the master", rows, cols, err)
	}
	if _, err := master.Write([]byte("typed\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(slave).ReadString('\n')
	if err != nil || line != "typed\n" {
		t.Errorf("the slave read %q, %v; want what the master wrote", line, err)
	}
	// The master is the runtime poller's: a read with nothing to read ends at its deadline.
	master.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	for {
		if _, err := master.Read(make([]byte, 64)); err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("master read past the echo = %v; want the deadline", err)
			}
			break
		}
	}
}

// TestNoTerminalNoPTY: a launcher whose stdio is files and pipes gives its agent no pty.
func TestNoTerminalNoPTY(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	f, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if tty, err := newAgentTerminal([3]*os.File{r, f, w}); tty != nil || err != nil {
		t.Errorf("newAgentTerminal(pipe, file, pipe) = %v, %v; want no terminal", tty, err)
	}
}

// TestAttachWiring: each of the agent's stdin, stdout and stderr that the launcher had on a terminal is the
// pty's slave, the others stay as they were, and the first on the slave is the new session's terminal.
func TestAttachWiring(t *testing.T) {
	tests := []struct {
		name     string
		terminal [3]bool
		wantCtty int
	}{
		{"all three", [3]bool{true, true, true}, 0},
		{"stdin piped", [3]bool{false, true, true}, 1},
		{"stdout to a file", [3]bool{true, false, true}, 0},
		{"stderr only", [3]bool{false, false, true}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			launcher := launcherTerminal(t)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			defer w.Close()
			var stdio [3]*os.File
			for i, on := range tt.terminal {
				stdio[i] = r
				if i > 0 {
					stdio[i] = w
				}
				if on {
					stdio[i] = launcher.slave
				}
			}
			tty, err := newAgentTerminal(stdio)
			if err != nil || tty == nil {
				t.Fatalf("newAgentTerminal = %v, %v; want a terminal", tty, err)
			}
			defer tty.close(false)
			child := exec.Command("true")
			child.Stdin, child.Stdout, child.Stderr = stdio[0], stdio[1], stdio[2]
			if err := tty.attach(child, nil); err != nil {
				t.Fatal(err)
			}
			got := [3]any{child.Stdin, child.Stdout, child.Stderr}
			for i, on := range tt.terminal {
				if want := any(stdio[i]); on {
					want = tty.slave
					if got[i] != want {
						t.Errorf("the agent's fd %d = %v; want the pty's slave", i, got[i])
					}
				} else if got[i] != want {
					t.Errorf("the agent's fd %d = %v; want the launcher's own", i, got[i])
				}
			}
			if a := child.SysProcAttr; !a.Setsid || !a.Setctty || a.Ctty != tt.wantCtty {
				t.Errorf("SysProcAttr = %+v; want Setsid, Setctty and Ctty %d", a, tt.wantCtty)
			}
			if tt.terminal[0] != (tty.saved != nil) {
				t.Errorf("raw mode taken %v; want it exactly when stdin is a terminal (%v)", tty.saved != nil, tt.terminal[0])
			}
		})
	}
}

// TestAgentTerminalRelay runs an agent (this test binary, TestAgentTerminalChild) on its pty behind a
// launcher's terminal (another pty, whose master the test types on): it is the leader of its own session
// with the pty as its controlling terminal, sized as the launcher's; a line typed on the launcher's
// terminal reaches it, a new window size does on SIGWINCH, its output and exit status come back, and the
// launcher's terminal is raw while it runs and as it was afterwards.
func TestAgentTerminalRelay(t *testing.T) {
	launcher := launcherTerminal(t)
	if err := setWinsize(launcher.master, 33, 101); err != nil {
		t.Fatal(err)
	}
	stdio := [3]*os.File{launcher.slave, launcher.slave, launcher.slave}
	tty, err := newAgentTerminal(stdio)
	if err != nil || tty == nil {
		t.Fatalf("newAgentTerminal(the launcher's terminal) = %v, %v", tty, err)
	}
	if lflag(t, launcher.slave)&unix.ICANON != 0 {
		t.Error("the launcher's terminal is not raw while the agent runs")
	}
	child := exec.Command(os.Args[0], "-test.run=^TestAgentTerminalChild$")
	child.Env = append(os.Environ(), agentChildEnv+"=1")
	child.Stdin, child.Stdout, child.Stderr = launcher.slave, launcher.slave, launcher.slave
	if err := tty.attach(child, nil); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(tty.slave.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	agentPTY := fmt.Sprintf("%d:%d", unix.Major(st.Rdev), unix.Minor(st.Rdev))
	done := make(chan error, 1)
	go func() {
		done <- runChild(child, func(err error) error { return err }, tty.relay)
	}()

	testkit.WaitFor(t, 10*time.Second, "the agent's ready line", func() bool {
		_, after, ok := strings.Cut(launcher.out.String(), "ready")
		return ok && strings.Contains(after, "\n")
	})
	want := fmt.Sprintf("ready leader=true ctty=%s size=33x101", agentPTY)
	if !strings.Contains(launcher.out.String(), want) {
		t.Errorf("the agent printed %q; want %q", launcher.out.String(), want)
	}
	// The launcher's terminal is resized and its foreground (here the test process) signalled, as the kernel
	// does for the launcher.
	if err := setWinsize(launcher.master, 40, 120); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(os.Getpid(), syscall.SIGWINCH)
	launcher.master.Write([]byte("hello from the keyboard\r"))
	var runErr error
	select {
	case runErr = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("the agent did not exit; it printed %q", launcher.out.String())
	}
	if err := tty.close(true); err != nil {
		t.Error(err)
	}
	var code *exitCodeError
	if !errors.As(runErr, &code) || code.code != 3 {
		t.Errorf("runChild = %v; want the agent's exit status 3", runErr)
	}
	// What the relay wrote is on the launcher's terminal; the test's reader of it may still be on its way.
	for _, w := range []string{"got \"hello from the keyboard\"", "size=40x120"} {
		testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("%q on the launcher's terminal", w), func() bool {
			return strings.Contains(launcher.out.String(), w)
		})
	}
	if lflag(t, launcher.slave)&unix.ICANON == 0 {
		t.Error("the launcher's terminal is still raw after the agent exited")
	}
}

// TestAgentTerminalChild is the agent of TestAgentTerminalRelay; it does nothing unless agentChildEnv is set.
func TestAgentTerminalChild(t *testing.T) {
	if os.Getenv(agentChildEnv) == "" {
		return
	}
	size := func() string {
		ws, _ := unix.IoctlGetWinsize(0, unix.TIOCGWINSZ)
		return fmt.Sprintf("%dx%d", ws.Row, ws.Col)
	}
	fmt.Printf("ready leader=%v ctty=%s size=%s\n", unix.Getpid() == mustSid(), cttyDevice(), size())
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	fmt.Printf("got %q\n", strings.TrimSuffix(line, "\n"))
	for deadline := time.Now().Add(10 * time.Second); size() != "40x120" && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("size=%s\n", size())
	os.Exit(3)
}

// cttyDevice is this process's controlling terminal as major:minor (tty_nr of /proc/self/stat).
func cttyDevice() string {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return err.Error()
	}
	// pid (comm) state ppid pgrp session tty_nr …: comm may hold spaces, so count from its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	var nr uint64
	fmt.Sscan(f[4], &nr)
	return fmt.Sprintf("%d:%d", (nr>>8)&0xfff, (nr&0xff)|((nr>>12)&0xfff00))
}

func mustSid() int {
	sid, err := unix.Getsid(0)
	if err != nil {
		panic(err)
	}
	return sid
}

// testTerminal is a launcher's terminal: the test types on its master and reads what it shows from it;
// the launcher's stdio is its slave.
type testTerminal struct {
	master, slave *os.File
	out           *lockedBuffer
}

// launcherTerminal opens a pty for a launcher, copying what it shows into out until the test ends.
func launcherTerminal(t *testing.T) *testTerminal {
	t.Helper()
	master, slave, err := openPTY()
	if err != nil {
		t.Fatal(err)
	}
	lt := &testTerminal{master: master, slave: slave, out: &lockedBuffer{}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			lt.out.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		master.Close()
		wg.Wait()
		slave.Close()
	})
	return lt
}

func lflag(t *testing.T, f *os.File) uint32 {
	t.Helper()
	tio, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	return tio.Lflag
}

// lockedBuffer is a bytes.Buffer one goroutine writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
