// Package main (ttyprobe) tries, as whatever user runs it, what an agent would to type a command into the
// terminal it was started from, and prints one line per try: the terminal probe of the integration suite
// (SPEC §20) runs it through `vibe-browser agent` on a root shell's terminal and as that shell's own child.
//
//	ttyprobe -push MARKER [-sweep]   push "touch MARKER\n" with TIOCSTI on fds 0, 1 and 2, on /dev/tty, and
//	                                 (-sweep) on every other /dev/pts/N it can open; write it to /dev/tty too
//	ttyprobe -read                   print its terminal's size, read a line from /dev/tty and print it, then
//	                                 wait (10 s at most) for the size to change and print it
//	ttyprobe … -exit N               exit with N
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func main() {
	push := flag.String("push", "", "the marker file the pushed command touches")
	sweep := flag.Bool("sweep", false, "push into every other /dev/pts/N it can open too")
	read := flag.Bool("read", false, "read a line from the terminal, and wait for a new window size")
	exit := flag.Int("exit", 0, "the exit status")
	flag.Parse()
	self, _ := os.Readlink("/proc/self/fd/0")
	owner := -1
	var st unix.Stat_t
	if unix.Fstat(0, &st) == nil {
		owner = int(st.Uid)
	}
	fmt.Printf("ttyprobe: uid=%d stdin=%s owned by %d\n", os.Getuid(), self, owner)
	if *push != "" {
		pushAll("touch "+*push+"\n", *sweep, self)
	}
	if *read {
		readLine()
	}
	os.Exit(*exit)
}

// pushAll pushes cmd every way it knows and prints how each went.
func pushAll(cmd string, sweep bool, self string) {
	for fd := range 3 {
		fmt.Printf("ttyprobe: TIOCSTI fd %d: %v\n", fd, result(tiocsti(fd, cmd)))
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0); err != nil {
		fmt.Printf("ttyprobe: open /dev/tty: %v\n", err)
	} else {
		fmt.Printf("ttyprobe: TIOCSTI /dev/tty: %v\n", result(tiocsti(int(tty.Fd()), cmd)))
		_, err := tty.WriteString(cmd)
		fmt.Printf("ttyprobe: write /dev/tty: %v\n", result(err))
		tty.Close()
	}
	if !sweep {
		return
	}
	pts, _ := filepath.Glob("/dev/pts/[0-9]*")
	for _, p := range pts {
		if p == self {
			continue
		}
		f, err := os.OpenFile(p, os.O_RDWR|unix.O_NOCTTY, 0)
		if err != nil {
			fmt.Printf("ttyprobe: open %s: %v\n", p, err)
			continue
		}
		fmt.Printf("ttyprobe: TIOCSTI %s: %v\n", p, result(tiocsti(int(f.Fd()), cmd)))
		f.Close()
	}
}

// tiocsti pushes s into the input of the terminal on fd, a byte at a time, as if typed there.
func tiocsti(fd int, s string) error {
	for i := range len(s) {
		b := s[i]
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TIOCSTI, uintptr(unsafe.Pointer(&b))); errno != 0 {
			return errno
		}
	}
	return nil
}

func result(err error) string {
	if err != nil {
		return "refused: " + err.Error()
	}
	return "done"
}

// readLine prints the terminal's size, reads a line from /dev/tty and prints it, then waits for the size
// to change.
func readLine() {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		fmt.Printf("ttyprobe: open /dev/tty: %v\n", err)
		return
	}
	defer tty.Close()
	size := func() string {
		ws, err := unix.IoctlGetWinsize(int(tty.Fd()), unix.TIOCGWINSZ)
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("%dx%d", ws.Row, ws.Col)
	}
	first := size()
	fmt.Printf("ttyprobe: size %s, waiting for a line\n", first)
	line, err := bufio.NewReader(tty).ReadString('\n')
	fmt.Printf("ttyprobe: read %q %v\n", strings.TrimRight(line, "\r\n"), result(err))
	for deadline := time.Now().Add(10 * time.Second); size() == first && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("ttyprobe: size now %s\n", size())
}
