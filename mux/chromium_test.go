package mux

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
)

// startChromium launches a headless Chromium on a fresh profile (a test that needs what only a real
// browser does: focus, titles, navigation) and returns its http://127.0.0.1:PORT endpoint. Its process
// group is killed at cleanup. No Chromium installed skips the test.
func startChromium(t *testing.T) string {
	t.Helper()
	bin := ""
	for _, name := range []string{os.Getenv("VIBE_CHROME"), "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); name != "" && err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("no Chromium installed (set VIBE_CHROME)")
	}
	profile := t.TempDir()
	args := append(testkit.HeadlessChromiumArgs(profile), "--remote-debugging-port=0", "about:blank")
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		// DevToolsActivePort: the port, then the browser's WebSocket path.
		if b, err := os.ReadFile(filepath.Join(profile, "DevToolsActivePort")); err == nil {
			sc := bufio.NewScanner(bytes.NewReader(b))
			if sc.Scan() {
				if port := strings.TrimSpace(sc.Text()); port != "" && sc.Scan() {
					return "http://127.0.0.1:" + port
				}
			}
		}
		select {
		case <-exited:
			t.Fatalf("chromium exited before it was ready: %s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromium not ready after 30s: %s", stderr.String())
		}
	}
}
