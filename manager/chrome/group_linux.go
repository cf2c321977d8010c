package chrome

import (
	"bytes"
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// childPIDs lists the live children of pid, from /proc.
func childPIDs(pid int) []int {
	var kids []int
	forEachProc(func(p int, state byte, ppid, _ int) {
		if ppid == pid && state != 'Z' && state != 'X' {
			kids = append(kids, p)
		}
	})
	return kids
}

// forEachProc calls fn with each process's pid, state, parent and process group, as /proc reads them.
func forEachProc(fn func(pid int, state byte, ppid, pgrp int)) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // exited while we looked
		}
		// Fields after the parenthesised command name (which may hold spaces): state ppid pgrp …
		i := bytes.LastIndexByte(st, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(st[i+1:])
		if len(f) < 3 || len(f[0]) != 1 {
			continue
		}
		ppid, err1 := strconv.Atoi(string(f[1]))
		pgrp, err2 := strconv.Atoi(string(f[2]))
		if err1 == nil && err2 == nil {
			fn(pid, f[0][0], ppid, pgrp)
		}
	}
	return true
}

// groupAlive reports whether any non-zombie process is in process group pgid. Zombies are skipped: orphaned
// members are reparented to init, and an init that does not reap (some containers) leaves them forever.
func groupAlive(pgid int) bool {
	if err := unix.Kill(-pgid, 0); errors.Is(err, unix.ESRCH) {
		return false
	}
	alive := false
	if !forEachProc(func(_ int, state byte, _, pgrp int) {
		alive = alive || pgrp == pgid && state != 'Z' && state != 'X'
	}) {
		return true // cannot tell: assume alive, the caller's bound still ends the wait
	}
	return alive
}
