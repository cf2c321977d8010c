//go:build integration

package integration

import (
	"bufio"
	"bytes"
	"fmt"
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
)

// chromiumProc is a headless Chromium launched for a test, in its own process group.
type chromiumProc struct {
	Cmd     *exec.Cmd
	Port    int
	HTTP    string // http://127.0.0.1:PORT
	WS      string // the browser WebSocket URL
	Profile string // --user-data-dir
	exited  chan struct{}
}

// chromiumBinary finds Chromium ($VIBE_CHROME, then the usual names) or skips the test.
func chromiumBinary(t testing.TB) string {
	t.Helper()
	for _, name := range []string{os.Getenv("VIBE_CHROME"), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	testkit.Missing(t, "no Chromium installed (set VIBE_CHROME)")
	return ""
}

// startChromium launches headless Chromium on a fresh profile with the given extra flags and waits for
// its DevTools endpoint. It is killed (process group, SIGKILL) at cleanup.
func startChromium(t testing.TB, extra ...string) *chromiumProc {
	t.Helper()
	return startChromiumProfile(t, t.TempDir(), extra...)
}

// startChromiumProfile is startChromium on a given profile directory (reused for a relaunch).
func startChromiumProfile(t testing.TB, profile string, extra ...string) *chromiumProc {
	t.Helper()
	c, err := launchChromium(chromiumBinary(t), profile, extra...)
	if err != nil {
		t.Fatalf("launch chromium: %v", err)
	}
	t.Cleanup(c.Kill)
	return c
}

// chromiumArgs are the flags every test browser gets.
func chromiumArgs(profile string) []string {
	return append(testkit.HeadlessChromiumArgs(profile), "--remote-debugging-port=0")
}

// launchChromium starts Chromium and waits (bounded) for DevToolsActivePort.
func launchChromium(bin, profile string, extra ...string) (*chromiumProc, error) {
	portFile := filepath.Join(profile, "DevToolsActivePort")
	os.Remove(portFile)
	args := append(chromiumArgs(profile), extra...)
	if !slices.Contains(extra, "--restore-last-session") {
		args = append(args, "about:blank") // a start URL would replace the restored session
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &chromiumProc{Cmd: cmd, Profile: profile, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(c.exited) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if b, err := os.ReadFile(portFile); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			var lines []string
			for sc.Scan() {
				lines = append(lines, strings.TrimSpace(sc.Text()))
			}
			if len(lines) >= 2 {
				port, err := strconv.Atoi(lines[0])
				if err == nil {
					c.Port = port
					c.HTTP = fmt.Sprintf("http://127.0.0.1:%d", port)
					c.WS = fmt.Sprintf("ws://127.0.0.1:%d%s", port, lines[1])
					return c, nil
				}
			}
		}
		select {
		case <-c.exited:
			return nil, fmt.Errorf("chromium exited before it was ready: %s", lastLines(stderr.String(), 5))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			c.Kill()
			return nil, fmt.Errorf("chromium not ready after 30s: %s", lastLines(stderr.String(), 5))
		}
	}
}

// Kill SIGKILLs Chromium's process group and waits for it to exit.
func (c *chromiumProc) Kill() {
	syscall.Kill(-c.Cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// waitSessionSaved waits until Chromium has written a session file in profile that names every path:
// Chromium saves its session (what a relaunch restores) on a timer.
func waitSessionSaved(t testing.TB, profile string, paths ...string) {
	t.Helper()
	testkit.WaitFor(t, 30*time.Second, "session saved to the profile", func() bool {
		files, _ := filepath.Glob(filepath.Join(profile, "Default", "Sessions", "Session_*"))
		for _, f := range files {
			b, _ := os.ReadFile(f)
			if !slices.ContainsFunc(paths, func(p string) bool { return !strings.Contains(string(b), p) }) {
				return true
			}
		}
		return false
	})
}
