package wrapshim

import (
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// startSleeper starts sleep(1) for secs in a process group of its own, as runBounded starts the CLI.
func startSleeper(t *testing.T, secs string) int {
	t.Helper()
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", secs},
		&syscall.ProcAttr{Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		t.Skipf("cannot start /bin/sleep: %v", err)
	}
	t.Cleanup(func() { // a child the test did not reap is still ours: its group id cannot be a stranger's
		var info unix.Siginfo
		if unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil) != nil {
			return // reaped
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_, _ = reap(pid)
	})
	return pid
}

// awaits are the two ways a call's child is awaited and bounded: on its pidfd, and, without pidfds, with the
// deadline's timers.
var awaits = []struct {
	name  string
	await func(pid int, timeout, grace time.Duration) bool
}{{"pidfd", awaitChild}, {"timers", awaitWithTimers}}

func TestDeadline(t *testing.T) {
	tests := []struct {
		name         string
		sleep        string
		timeout      time.Duration
		wantTimedOut bool
		wantSignal   syscall.Signal // how the child ended; 0 for an exit
	}{
		{"ends in time", "0", time.Minute, false, 0},
		{"overruns: SIGTERM", "60", 50 * time.Millisecond, true, syscall.SIGTERM},
	}
	for _, a := range awaits {
		for _, tt := range tests {
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				pid := startSleeper(t, tt.sleep)
				if got := a.await(pid, tt.timeout, time.Minute); got != tt.wantTimedOut {
					t.Errorf("%s(%v) = %v; want %v", a.name, tt.timeout, got, tt.wantTimedOut)
				}
				ws, err := reap(pid)
				if err != nil {
					t.Fatal(err)
				}
				if got := ws.Signal(); ws.Signaled() != (tt.wantSignal != 0) || ws.Signaled() && got != tt.wantSignal {
					t.Errorf("child ended with %v; want signal %v", ws, tt.wantSignal)
				}
			})
		}
	}
}

// TestDeadlineKillsAfterGrace: a group that outlives SIGTERM gets SIGKILL once the grace is over.
func TestDeadlineKillsAfterGrace(t *testing.T) {
	for _, a := range awaits {
		t.Run(a.name, func(t *testing.T) {
			pid := startSleeper(t, "60")
			// Stopped, the child holds SIGTERM pending and unhandled; only SIGKILL ends it.
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			// Only once it has stopped: a child not yet scheduled to take the SIGSTOP (a loaded machine) dies of
			// the SIGTERM that finds it still running.
			var info unix.Siginfo
			if err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOWAIT, nil); err != nil {
				t.Fatal(err)
			}
			if !a.await(pid, 10*time.Millisecond, 50*time.Millisecond) {
				t.Errorf("%s = false after SIGKILL; want true", a.name)
			}
			if ws, err := reap(pid); err != nil || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Errorf("child ended with %v, %v; want SIGKILL", ws, err)
			}
		})
	}
}

// TestDeadlineStoppedNeverKills: once stop returned, the timers are spent: the child, still unreaped, is
// never signalled.
func TestDeadlineStoppedNeverKills(t *testing.T) {
	pid := startSleeper(t, "0.2")
	d := startDeadline(pid, 100*time.Millisecond, time.Millisecond)
	if d.stop() {
		t.Fatal("stop() = true before the timeout; want false")
	}
	waitExited(pid)
	if ws, err := reap(pid); err != nil || ws.Signaled() || ws.ExitStatus() != 0 {
		t.Errorf("child ended with %v, %v; want a clean exit, unsignalled", ws, err)
	}
}
