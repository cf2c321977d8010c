package keeper

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"vibebrowser/mux/sys/procid"
)

// browser is the Chromium the keeper started: its pipe's two ends and its exit.
type browser struct {
	pid  int
	pgid int // Chromium leads its own group: one signal reaches every helper it forks

	toBrowser   *os.File // the write end of the pipe Chromium reads as fd 3
	fromBrowser *os.File // the read end of the pipe Chromium writes as fd 4

	done   chan struct{} // closed when Chromium has exited, the rest of its group is killed and it is reaped
	status int           // Chromium's exit status, 128+n for a signal n; written before done is closed
	err    error         // why the wait failed, if it did; written before done is closed
}

// startBrowser starts Chromium with its DevTools pipe on fds 3 and 4, in its own process group, its stdout
// and stderr the keeper's own. Its waiter runs until Chromium exits.
func startBrowser(binary string, args []string) (*browser, error) {
	childIn, toBrowser, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pipe to chromium: %w", err)
	}
	fromBrowser, childOut, err := os.Pipe()
	if err != nil {
		childIn.Close()
		toBrowser.Close()
		return nil, fmt.Errorf("pipe from chromium: %w", err)
	}
	growPipe(toBrowser)
	growPipe(fromBrowser)
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.ExtraFiles = []*os.File{childIn, childOut} // fd 3 and fd 4, as --remote-debugging-pipe wants them
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	// The child holds its copies: closing ours is what lets each side see the other's end as EOF.
	childIn.Close()
	childOut.Close()
	if err != nil {
		toBrowser.Close()
		fromBrowser.Close()
		return nil, fmt.Errorf("start %s: %w", binary, err)
	}
	b := &browser{
		pid:         cmd.Process.Pid,
		pgid:        cmd.Process.Pid, // Setpgid with a zero Pgid: the group is the child's pid
		toBrowser:   toBrowser,
		fromBrowser: fromBrowser,
		done:        make(chan struct{}),
	}
	go b.wait(cmd) // ends when Chromium does; the keeper waits for done
	return b, nil
}

// wait reaps Chromium once it has exited, first killing whatever is left of its group: helpers that outlive
// the browser would otherwise hold its profile.
func (b *browser) wait(cmd *exec.Cmd) {
	defer close(b.done)
	exited := procid.WaitExited(b.pid)
	if exited {
		b.signalGroup(syscall.SIGKILL)
	}
	err := cmd.Wait()
	if !exited {
		b.signalGroup(syscall.SIGKILL)
	}
	ps := cmd.ProcessState
	if ps == nil {
		b.status, b.err = exitFailure, fmt.Errorf("wait for chromium: %w", err)
		return
	}
	b.status = exitStatus(ps)
}

// exitStatus is how the keeper reports a process's end as its own: its exit code, or 128+n for a signal n,
// as a shell does.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// signalGroup sends sig to Chromium's process group; a group already gone is no error.
func (b *browser) signalGroup(sig syscall.Signal) error {
	if err := syscall.Kill(-b.pgid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal chromium's group %d: %w", b.pgid, err)
	}
	return nil
}

// waitDone reports whether Chromium has exited within d.
func (b *browser) waitDone(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-b.done:
		return true
	case <-t.C:
		return false
	}
}

// exited reports whether Chromium has exited and been reaped.
func (b *browser) exited() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}
