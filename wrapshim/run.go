package wrapshim

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"vibebrowser/manager/api"
)

// managerDialWindow is how long an unreachable manager is retried: launchd has no readiness signal, so a
// call right after a (re)start may arrive before the socket listens.
const managerDialWindow = 3 * time.Second

// eventTimeout bounds the best-effort wedge report.
const eventTimeout = 2 * time.Second

// Main runs the shim: it reads the config beside the executable, applies the rules, asks the manager for a
// browser and runs the real CLI. It returns how the call ended; codes turns that into the exit code the call's
// report to the manager carries, as the shim's main turns it into the process's.
func Main(args []string, codes ExitCodes) Ending {
	environ := os.Environ()
	clock := startPhases(environ)
	// The forwarder relays signals to the real CLI (where it is os/signal's, it registers them now, in the
	// background: forward_notify.go); --ask-human handles signals its own way (they cancel the handoff).
	var fw *forwarder
	if !wantsHuman(args) {
		fw = startForwarder()
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "browser-use: cannot locate the shim executable: %v\n", err)
		return EndConfig
	}
	cfg, err := api.LoadShimConfig(filepath.Join(filepath.Dir(exe), api.ShimConfigName))
	if err != nil {
		if errors.Is(err, api.ErrNoShimConfig) {
			fmt.Fprintf(os.Stderr, "browser-use: this wrapper has no config beside it (%v); it must be generated "+
				"by the vibe-browser manager: start it (vibe-browser serve) and use the PATH from vibe-browser env\n", err)
		} else {
			fmt.Fprintf(os.Stderr, "browser-use: %v; restart the vibe-browser manager to regenerate the wrapper\n", err)
		}
		return EndConfig
	}
	clock.mark("config")
	s := &shim{cfg: cfg, stderr: os.Stderr, fw: fw, clock: clock, codes: codes}
	code := s.run(args, environ)
	clock.print()
	return code
}

type shim struct {
	cfg    *api.ShimConfig
	stderr *os.File
	fw     *forwarder // nil for --ask-human, which starts no child
	clock  *phaseClock
	codes  ExitCodes
}

func (s *shim) fail(end Ending, format string, args ...any) Ending {
	fmt.Fprintf(s.stderr, "browser-use: "+format+"\n", args...)
	return end
}

func (s *shim) run(args, environ []string) Ending {
	cfg := s.cfg
	if cfg.Kind == api.ShimKindGuard {
		return s.fail(EndUsage, "no managed browser-use wrapper is on PATH for this shell, so no browser is "+
			"attached. Put the store's wrapper first on PATH with eval \"$(vibe-browser env --store STORE --task "+
			"$VIBE_TASK_ID)\" (or --web for the store-less web browser), then call browser-use again")
	}
	if wantsHuman(args) {
		task, token := taskEnv(environ)
		report := newReport(task, token, args)
		end := s.askHuman(args, environ)
		s.send(report, end, api.CallAskHuman, "")
		return end
	}
	call, err := Plan(cfg, args, environ)
	if err != nil {
		task, token := taskEnv(environ)
		report := newReport(task, token, args)
		s.send(report, EndUsage, api.CallRefused, err.Error())
		return s.fail(EndUsage, "%v", err)
	}
	report := newReport(call.TaskID, call.Token, nil)
	report.forCall(call)
	if err := checkExecutable(cfg.RealBU); err != nil {
		msg := fmt.Sprintf("the real browser-use CLI %v; install browser-use (0.13 or newer) and "+
			"restart the vibe-browser manager so it bakes the new path", err)
		s.send(report, EndNoRealCLI, api.CallUnavailable, msg)
		return s.fail(EndNoRealCLI, "%s", msg)
	}
	s.clock.mark("plan")
	resp, err := s.ensure(call)
	if err != nil {
		msg := fmt.Sprintf("no browser for session %s: %v", call.BUName, err)
		s.send(report, EndUnavailable, api.CallUnavailable, msg)
		return s.fail(EndUnavailable, "%s", msg)
	}
	s.clock.mark("ensure")
	report.mode = resp.Timeline
	env := childEnv(environ, cfg, call.BUName, resp)
	t := startTaps([3]*os.File{os.Stdin, os.Stdout, s.stderr}, !report.full())
	s.clock.mark("taps")
	end, timedOut := s.runBounded(call.Args, env, t, cfg.CallTimeout())
	t.finish(&report.rep)
	s.clock.mark("finish")
	counter := wedgeCounter{path: filepath.Join(cfg.RuntimeDir, "wedge-"+call.BUName+".n")}
	if !timedOut {
		if err := counter.reset(); err != nil {
			fmt.Fprintf(s.stderr, "browser-use: warning: cannot reset the wedge counter: %v\n", err)
		}
		s.clock.mark("wedge")
		outcome := api.CallOK
		if end != 0 {
			outcome = api.CallFailed
		}
		s.send(report, end, outcome, "")
		s.clock.mark("report")
		return end
	}
	end, outcome, msg := s.escalate(call, env, &counter)
	s.send(report, end, outcome, msg)
	return s.fail(end, "%s", msg)
}

// escalate handles a timed-out call: the first consecutive timeout reloads the session's daemon (142), the
// next ones give up on the session (75). The call itself is never retried: a heredoc may already have clicked.
// It returns how the call ended, the outcome and the message for the agent.
func (s *shim) escalate(call *Call, env []string, counter *wedgeCounter) (Ending, string, string) {
	timeout := int(s.cfg.CallTimeout() / time.Second)
	n, err := counter.increment()
	if err != nil {
		// Without a counter we cannot tell a first timeout from a repeat; reloading is the safe answer.
		fmt.Fprintf(s.stderr, "browser-use: warning: wedge counter: %v\n", err)
		n = 1
	}
	if n == 1 {
		rc, reloadTimedOut := s.reload(env)
		if reloadTimedOut || rc != 0 {
			fmt.Fprintf(s.stderr, "browser-use: warning: the reload of session %s did not finish cleanly (exit %d)\n",
				call.BUName, s.codes(rc))
		}
		return EndTimeout, api.CallTimeout, fmt.Sprintf("browser-use timed out after %ds; reloaded the daemon for "+
			"session %s. The call was not retried (it may have acted on the page): check the page state, then "+
			"re-issue it", timeout, call.BUName)
	}
	msg := fmt.Sprintf("browser-use timed out after %ds again (%d timeouts in a row) for session %s: the browser "+
		"is unrecoverable for this session. Stop retrying browser calls in this session and record the "+
		"unfinished work as a gap", timeout, n, call.BUName)
	ctx, cancel := context.WithTimeout(context.Background(), eventTimeout)
	defer cancel()
	client := s.cfg.Client(call.Token)
	_ = client.ReportEvent(ctx, api.Event{ // best effort: the exit code already tells the caller
		Kind: api.EventWedgeUnrecoverable, StoreID: s.cfg.StoreID, BUName: call.BUName, TaskID: call.TaskID, Message: msg,
	})
	return EndWedged, api.CallWedged, msg
}

// ensure asks the manager for the session's endpoint, retrying an unreachable manager for a short window.
func (s *shim) ensure(call *Call) (api.EnsureResponse, error) {
	storeID := s.cfg.StoreID
	if s.cfg.Kind == api.ShimKindWeb {
		storeID = ""
	}
	req := api.AgentRequest(storeID, call.TaskID, call.BUName, call.ClientID, "")
	client := s.cfg.Client(call.Token)
	client.Timeout = s.cfg.EnsureTimeout() // a bound without a timer (api.Client.Timeout)
	resp, err := client.EnsureAgent(context.Background(), req, managerDialWindow)
	return resp, refusal(err)
}

// dialRetry runs call, again while the manager is unreachable, for managerDialWindow. The manager's own
// refusal is returned as its message alone.
func dialRetry(call func() error) error {
	return refusal(api.RetryUnreachable(managerDialWindow, call))
}

// refusal is the manager's own refusal as its message alone; any other error as it is.
func refusal(err error) error {
	var apiErr *api.Error
	if errors.As(err, &apiErr) {
		return errors.New(apiErr.Message)
	}
	return err
}

// scrubbed reports whether the variable name would send the daemon's CDP traffic through a proxy, spend the
// user's cloud key or let browser-use spawn a browser of its own.
func scrubbed(name string) bool {
	switch name {
	case "http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
		"BROWSER_USE_API_KEY", "BU_AUTOSPAWN":
		return true
	}
	return false
}

// childEnv is the caller's environment minus the scrubbed variables, plus the session's identity and its
// downloads folder (VIBE_DOWNLOAD_DIR, SPEC §12). It turns off browser-harness's tab marker (≥ 0.1.12
// prefixes the title of its tab, which in a shared, logged-in browser the person and the other tenants see).
// A caller's own BH_* or VIBE_DOWNLOAD_DIR value is overridden: runBounded keeps the last value of a name that
// appears twice (dedupEnv), and the shim's come last.
func childEnv(environ []string, cfg *api.ShimConfig, buName string, resp api.EnsureResponse) []string {
	env := make([]string, 0, len(environ)+8)
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !scrubbed(name) {
			env = append(env, kv)
		}
	}
	if resp.DownloadDir != "" { // a manager from before SPEC §12 names none
		env = append(env, "VIBE_DOWNLOAD_DIR="+resp.DownloadDir)
	}
	return append(env,
		"BU_NAME="+buName,
		"BU_CDP_WS="+resp.CDPWS,
		"BH_RUNTIME_DIR="+cfg.RuntimeDir,
		"BH_RUNTIME_DIR_SHARED=1",
		"BH_TMP_DIR="+cfg.TmpDir,
		"BH_TMP_DIR_SHARED=1",
		"BH_TAB_MARKER=0",
	)
}

func checkExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("%s is missing", path)
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", path)
	}
	return nil
}

// reload runs `real_bu --reload` for the timed-out session, bounded, its stdin empty (as os/exec gave it)
// and its output on the shim's stderr.
func (s *shim) reload(env []string) (Ending, bool) {
	null, err := os.Open(os.DevNull)
	if err != nil {
		fmt.Fprintf(s.stderr, "browser-use: cannot start %s: %v\n", s.cfg.RealBU, err)
		return EndNoRealCLI, false
	}
	defer null.Close()
	return s.runBounded([]string{"--reload"}, env, startTaps([3]*os.File{null, s.stderr, s.stderr}, true), s.cfg.ReloadTimeout())
}

// runBounded starts the real CLI in its own process group with the taps' stdio as its descriptors 0, 1 and 2,
// and waits for it. The forwarder relays INT/TERM/HUP to the group meanwhile; at timeout the group gets
// SIGTERM, then SIGKILL after the kill grace (awaitChild). It returns the child's exit status (128+signal for a
// signalled child), or EndNoRealCLI when it could not be run, and whether the timeout fired.
//
// It forks with syscall.ForkExec, waits on the child's pidfd and reaps it with wait4 rather than through
// os/exec: os.StartProcess's first call forks and reaps a throwaway child to probe pidfd support, which this
// one child, signalled through its group, never needs.
func (s *shim) runBounded(args, env []string, t *taps, timeout time.Duration) (end Ending, timedOut bool) {
	stdio := t.stdio
	path := s.cfg.RealBU
	env, err := dedupEnv(env)
	if err != nil {
		fmt.Fprintf(s.stderr, "browser-use: cannot start %s: %v\n", path, err)
		return EndNoRealCLI, false
	}
	// Fd puts a descriptor the runtime polls back into blocking mode, as os/exec does for its child.
	attr := &syscall.ProcAttr{Env: env, Files: []uintptr{stdio[0].Fd(), stdio[1].Fd(), stdio[2].Fd()},
		Sys: &syscall.SysProcAttr{Setpgid: true}}
	pid, err := s.fw.start(path, append([]string{path}, args...), attr)
	runtime.KeepAlive(stdio)
	s.clock.mark("fork")
	t.started()
	if err != nil {
		fmt.Fprintf(s.stderr, "browser-use: cannot start %s: %v\n", path, &os.PathError{Op: "fork/exec", Path: path, Err: err})
		return EndNoRealCLI, false
	}
	timedOut = awaitChild(pid, timeout, s.cfg.KillGrace()) // Setpgid with a zero Pgid: the group is the child's pid
	s.clock.mark("child")
	s.fw.release()
	ws, err := reap(pid)
	if err != nil { // only if something else reaped it: the runtime's SIGCHLD handler rules out the kernel
		fmt.Fprintf(s.stderr, "browser-use: lost %s (pid %d): %v\n", path, pid, err)
		return EndNoRealCLI, timedOut
	}
	if ws.Signaled() {
		return Ending(128 + int(ws.Signal())), timedOut
	}
	return Ending(ws.ExitStatus()), timedOut
}

// waitExited returns once the child pid has exited, leaving it unreaped: until reap, its pid and group id
// cannot be reused, so signalling the group is never signalling a stranger.
func waitExited(pid int) {
	var info unix.Siginfo
	for unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil) == syscall.EINTR {
	}
}

// reap collects the exited child pid and returns how it ended.
func reap(pid int) (syscall.WaitStatus, error) {
	var ws syscall.WaitStatus
	for {
		if _, err := syscall.Wait4(pid, &ws, 0, nil); err != syscall.EINTR {
			return ws, err
		}
	}
}

// dedupEnv keeps the last value of each name, as os/exec does: the shim's own variables come after the
// caller's and must win. An entry holding a NUL is refused, as os/exec refuses it. It compacts env in place:
// a name is looked for among the entries after it, with no map (an environment has tens of entries, and a
// map of them was a few fresh pages on every call).
func dedupEnv(env []string) ([]string, error) {
	out := env[:0]
	for i, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			return nil, errors.New("exec: environment variable contains NUL")
		}
		name, ok := envName(kv)
		switch {
		case !ok && kv == "":
			continue
		case ok && slices.ContainsFunc(env[i+1:], func(later string) bool {
			n, ok := envName(later)
			return ok && n == name
		}):
			continue
		}
		out = append(out, kv)
	}
	return out, nil
}

// envName is the name of the entry kv, and false for an entry without "=": a name may start with "=", as
// os/exec has it.
func envName(kv string) (string, bool) {
	eq := strings.IndexByte(kv, '=')
	if eq == 0 {
		eq = strings.IndexByte(kv[1:], '=') + 1
	}
	if eq < 0 {
		return "", false
	}
	return kv[:eq], true
}
