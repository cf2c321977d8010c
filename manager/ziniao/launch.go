package ziniao

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"vibebrowser/mux/errdefs"
)

// DefaultLaunchWait bounds the wait for a client the manager started to answer its HTTP API.
const DefaultLaunchWait = 60 * time.Second

// ErrCannotLaunch is the class of EnsureRunning's errors: the client is not running and this machine cannot
// start it (or started it, but its HTTP API never answered). The manager maps this to 503 unavailable.
var ErrCannotLaunch = errdefs.Unavailable("the Ziniao client is not running")

// DefaultCommand returns how the client is started on this system when no command is configured, before
// the WebDriver flags are appended: on macOS the app through open(1); elsewhere nothing (the executable's
// place varies), so the client must be configured or already running.
func DefaultCommand() []string {
	if runtime.GOOS == "darwin" {
		// open hands --args to a newly started app only: a client already running in normal mode must be quit
		// first, which the error below says.
		return []string{"open", "-a", "ziniao", "--args"}
	}
	return nil
}

// WebDriverArgs are the flags that start the client with its local HTTP API on port.
func WebDriverArgs(port int) []string {
	return []string{"--run_type=web_driver", "--ipc_type=http", "--port=" + strconv.Itoa(port)}
}

// EnsureRunning makes sure the client answers on c's port. When something answers (even with an API
// error, such as a wrong password, which the next call reports) it returns at once. When nothing does, it
// starts command with the WebDriver flags, detached in a session of its own so that it outlives the
// manager and is never stopped with a store, appends its output to logPath ("" discards it), and waits up
// to wait for the API to answer. An empty command, or WSL (which cannot start Windows' Electron app with these flags), is an
// ErrCannotLaunch that says how to start the client by hand. started reports whether it started the client.
func EnsureRunning(ctx context.Context, c *Client, command []string, wait time.Duration, logPath string) (started bool, err error) {
	if answers(ctx, c) {
		return false, nil
	}
	port := c.portOrDefault()
	byHand := fmt.Sprintf("start it in WebDriver mode (ziniao %s)", strings.Join(WebDriverArgs(port), " "))
	if isWSL() {
		return false, fmt.Errorf("%w on port %d, and WSL cannot start it: on Windows, %s", ErrCannotLaunch, port, byHand)
	}
	if len(command) == 0 {
		return false, fmt.Errorf("%w on port %d: %s, or set VIBE_ZINIAO_CLIENT to its executable so the manager starts "+
			"it when needed", ErrCannotLaunch, port, byHand)
	}
	cmd := exec.Command(command[0], append(command[1:], WebDriverArgs(port)...)...)
	if logPath != "" {
		logw, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return false, fmt.Errorf("%w on port %d, and its log: %v", ErrCannotLaunch, port, err)
		}
		defer logw.Close() // the client has its own descriptor
		cmd.Stdout, cmd.Stderr = logw, logw
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("%w on port %d, and starting %s failed: %v", ErrCannotLaunch, port, command[0], err)
	}
	exited := make(chan error, 1)
	// The one goroutine without an owner that stops it: it reaps the client whenever the client ends, which
	// may be long after this manager (nothing here ever stops the shared client).
	go func() { exited <- cmd.Wait() }()
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return true, fmt.Errorf("%w: started %s (pid %d), but its HTTP API did not answer on port %d within %v; "+
				"if it was already open in normal mode, quit it so it can start in WebDriver mode", ErrCannotLaunch,
				command[0], cmd.Process.Pid, port, wait)
		case err := <-exited:
			// open(1), or a launcher script, returns once the app is on its way; a failure status is final.
			if err != nil {
				return true, fmt.Errorf("%w: %s failed (%v) without serving its HTTP API on port %d", ErrCannotLaunch,
					command[0], err, port)
			}
			exited = nil
		case <-tick.C:
			if answers(ctx, c) {
				return true, nil
			}
		}
	}
}

// answers reports whether the client answers on its port at all: an API error is an answer.
func answers(ctx context.Context, c *Client) bool {
	err := c.Ping(ctx)
	var apiErr *APIError
	return err == nil || errors.As(err, &apiErr)
}

// isWSL reports whether this is Linux under the Windows Subsystem for Linux.
func isWSL() bool {
	if runtime.GOOS != "linux" {
		return false
	}
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	return err == nil && strings.Contains(strings.ToLower(string(b)), "microsoft")
}
