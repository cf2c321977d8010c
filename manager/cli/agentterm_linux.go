package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"

	"vibebrowser/mux/sys/osuser"
)

// drainBound is how long the agent's last output is read after it exited: what it wrote is in the pty's
// buffer at once, but a process it left behind may hold the pty open for ever.
const drainBound = 500 * time.Millisecond

// agentTerminal is the pty an agent gets where its launcher's stdio is a terminal (SPEC §20). The agent's
// new session has the pty as its controlling terminal, so its TIOCSTI and its /dev/tty reach only the pty;
// the launcher's terminal sees what the relay copies and nothing else, and the agent has no descriptor of it.
type agentTerminal struct {
	master, slave *os.File
	onSlave       [3]bool     // which of the agent's stdin, stdout and stderr are the slave
	keys          *os.File    // the launcher's terminal that is typed on (its stdin); nil when stdin is not one
	screen        *os.File    // the launcher's terminal the agent's output is shown on
	saved         *term.State // keys' settings before raw mode, restored by close
	wake          [2]int      // a pipe: a byte on it stops the key reader, which waits in poll
	done          chan struct{}
}

// newAgentTerminal opens the agent's pty when any of the launcher's stdin, stdout or stderr is a terminal
// (nil otherwise: the agent is given its stdio as it is), sized and set like that terminal, and puts the
// terminal typed on in raw mode, so that every key (^C and ^Z too) goes to the agent's pty to act there.
func newAgentTerminal(stdio [3]*os.File) (*agentTerminal, error) {
	t := &agentTerminal{wake: [2]int{-1, -1}, done: make(chan struct{})}
	for i, f := range stdio {
		t.onSlave[i] = f != nil && term.IsTerminal(int(f.Fd()))
	}
	switch {
	case t.onSlave[1]:
		t.screen = stdio[1]
	case t.onSlave[2]:
		t.screen = stdio[2]
	case t.onSlave[0]:
		t.screen = stdio[0] // a terminal opened read-write, as shells open theirs
	default:
		return nil, nil
	}
	if t.onSlave[0] {
		t.keys = stdio[0]
	}
	var err error
	if t.master, t.slave, err = openPTY(); err != nil {
		return nil, err
	}
	like := t.screen
	if t.keys != nil {
		like = t.keys
	}
	if err := copyTermios(t.slave, like); err != nil {
		t.closeFiles()
		return nil, err
	}
	if rows, cols, err := winsize(t.screen); err == nil {
		setWinsize(t.master, rows, cols) // a terminal that knows no size leaves the pty's at 0×0, as it is
	}
	if err := unix.Pipe2(t.wake[:], unix.O_CLOEXEC); err != nil {
		t.closeFiles()
		return nil, fmt.Errorf("pipe: %w", err)
	}
	if t.keys != nil {
		if t.saved, err = term.MakeRaw(int(t.keys.Fd())); err != nil {
			t.closeFiles()
			return nil, fmt.Errorf("raw mode of %s: %w", t.keys.Name(), err)
		}
	}
	return t, nil
}

// attach gives child the pty for each of its stdin, stdout and stderr that the launcher had a terminal on,
// a new session with the pty as its controlling terminal, and, when it runs as user, the pty as user's own:
// it must be able to open its /dev/tty's device by name, and nobody else to.
func (t *agentTerminal) attach(child *exec.Cmd, user *osuser.User) error {
	ctty := -1
	for i, on := range t.onSlave {
		if !on {
			continue
		}
		switch i {
		case 0:
			child.Stdin = t.slave
		case 1:
			child.Stdout = t.slave
		case 2:
			child.Stderr = t.slave
		}
		if ctty < 0 {
			ctty = i
		}
	}
	if child.SysProcAttr == nil {
		child.SysProcAttr = &syscall.SysProcAttr{}
	}
	child.SysProcAttr.Setsid = true
	child.SysProcAttr.Setctty, child.SysProcAttr.Ctty = true, ctty // Ctty is the child's descriptor
	if user == nil {
		return nil
	}
	if err := errors.Join(t.slave.Chown(user.UID, user.GID), t.slave.Chmod(0o600)); err != nil {
		return fmt.Errorf("give the agent's terminal to %s: %w", user.Name, err)
	}
	return nil
}

// relay copies the agent's output to the launcher's terminal, its keys to the agent, and its window size
// on every SIGWINCH, until ctx ends (the agent exited); then it reads the agent's last output, bounded by
// drainBound, and returns. It runs once, after the agent started.
func (t *agentTerminal) relay(ctx context.Context) {
	defer close(t.done)
	t.slave.Close() // the agent holds its copy: when its last one closes, the master reads EIO, the end
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t.showOutput()
	}()
	if t.keys != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.sendKeys()
		}()
	}
	for running := true; running; {
		select {
		case <-winch:
			if rows, cols, err := winsize(t.screen); err == nil {
				setWinsize(t.master, rows, cols)
			}
		case <-ctx.Done():
			running = false
		}
	}
	t.master.SetReadDeadline(time.Now().Add(drainBound))
	unix.Write(t.wake[1], []byte{0})
	t.master.SetWriteDeadline(time.Now()) // keys the agent no longer reads must not hold the relay
	wg.Wait()
}

// showOutput copies the agent's output to the launcher's terminal until the pty closes (EIO once no
// process holds its slave) or the drain's deadline.
func (t *agentTerminal) showOutput() {
	buf := make([]byte, 32*1024)
	for {
		n, err := t.master.Read(buf)
		if n > 0 {
			if _, werr := t.screen.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// sendKeys copies what is typed on the launcher's terminal to the agent's pty until wake says stop or
// the terminal closes. It waits in poll, on the terminal and the wake pipe, rather than in a read that
// nothing could end.
func (t *agentTerminal) sendKeys() {
	buf := make([]byte, 4096)
	keys := int(t.keys.Fd())
	fds := []unix.PollFd{{Fd: int32(keys), Events: unix.POLLIN}, {Fd: int32(t.wake[0]), Events: unix.POLLIN}}
	for {
		fds[0].Revents, fds[1].Revents = 0, 0
		if _, err := unix.Poll(fds, -1); err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return
		}
		if fds[1].Revents != 0 {
			return
		}
		n, err := unix.Read(keys, buf)
		if errors.Is(err, unix.EINTR) || errors.Is(err, unix.EAGAIN) {
			continue
		}
		if n <= 0 || err != nil {
			return // the launcher's terminal hung up: its SIGHUP reaches the agent through runChild
		}
		if _, err := t.master.Write(buf[:n]); err != nil {
			return
		}
	}
}

// close ends the agent's terminal: it waits for the relay when the agent had started (relayed), restores
// the launcher's terminal and closes the pty.
func (t *agentTerminal) close(relayed bool) error {
	if relayed {
		<-t.done
	}
	var err error
	if t.saved != nil {
		if rerr := term.Restore(int(t.keys.Fd()), t.saved); rerr != nil {
			err = fmt.Errorf("restore %s: %w", t.keys.Name(), rerr)
		}
	}
	t.closeFiles()
	return err
}

// closeFiles closes the pty's ends and the wake pipe; closing one twice is harmless.
func (t *agentTerminal) closeFiles() {
	if t.master != nil {
		t.master.Close()
	}
	if t.slave != nil {
		t.slave.Close()
	}
	for i, fd := range t.wake {
		if fd >= 0 {
			unix.Close(fd)
			t.wake[i] = -1
		}
	}
}
