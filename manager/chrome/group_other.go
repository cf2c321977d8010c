//go:build unix && !linux

package chrome

import (
	"errors"

	"golang.org/x/sys/unix"
)

// groupAlive reports whether any process is in process group pgid (launchd reaps orphans, so zombies do not
// linger here).
func groupAlive(pgid int) bool {
	return !errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}

// childPIDs is not read here; a keeper killed before it named its browser leaves that browser to its pipe's
// closing.
func childPIDs(int) []int { return nil }
