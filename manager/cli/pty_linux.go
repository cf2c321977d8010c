package cli

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPTY opens a new pseudo-terminal: its master, pollable (so that reads and writes can be given a
// deadline), and its slave; neither becomes this process's controlling terminal, and both are closed on exec.
func openPTY() (master, slave *os.File, err error) {
	// O_NONBLOCK before os.NewFile: only then does the runtime's poller take the fd, and deadlines work.
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open /dev/ptmx: %w", err)
	}
	master = os.NewFile(uintptr(mfd), "/dev/ptmx")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock the pty: %w", err)
	}
	n, err := unix.IoctlGetUint32(mfd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("the pty's number: %w", err)
	}
	name := "/dev/pts/" + strconv.FormatUint(uint64(n), 10)
	// TIOCGPTPEER opens the slave from the master itself (Linux 4.13): no path in /dev/pts that another
	// devpts mount, or a name reused meanwhile, could make another terminal. Older kernels open it by name.
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC)
	if errno != 0 {
		if !errors.Is(errno, unix.ENOTTY) && !errors.Is(errno, unix.EINVAL) {
			master.Close()
			return nil, nil, fmt.Errorf("open the pty's slave: %w", errno)
		}
		fd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		if err != nil {
			master.Close()
			return nil, nil, fmt.Errorf("open %s: %w", name, err)
		}
		sfd = uintptr(fd)
	}
	return master, os.NewFile(sfd, name), nil
}

// withFd runs fn on f's descriptor without f.Fd, which would take a pollable file (the master) off the
// runtime's poller and so end its deadlines.
func withFd(f *os.File, fn func(fd int) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// winsize is f's terminal's window size.
func winsize(f *os.File) (rows, cols uint16, err error) {
	err = withFd(f, func(fd int) error {
		ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ)
		if err == nil {
			rows, cols = ws.Row, ws.Col
		}
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("window size of %s: %w", f.Name(), err)
	}
	return rows, cols, nil
}

// setWinsize sets f's terminal to rows×cols; on a pty's master the kernel signals SIGWINCH to the
// foreground of the slave's session.
func setWinsize(f *os.File, rows, cols uint16) error {
	err := withFd(f, func(fd int) error {
		return unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols})
	})
	if err != nil {
		return fmt.Errorf("set window size of %s: %w", f.Name(), err)
	}
	return nil
}

// copyTermios gives to's terminal from's settings (erase and interrupt keys, line endings), so that the
// agent's terminal behaves like the one it is typed on.
func copyTermios(to, from *os.File) error {
	var tio *unix.Termios
	err := withFd(from, func(fd int) (err error) {
		tio, err = unix.IoctlGetTermios(fd, unix.TCGETS)
		return err
	})
	if err != nil {
		return fmt.Errorf("settings of %s: %w", from.Name(), err)
	}
	return withFd(to, func(fd int) error { return unix.IoctlSetTermios(fd, unix.TCSETS, tio) })
}
