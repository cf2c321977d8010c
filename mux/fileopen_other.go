//go:build unix && !linux

package mux

import (
	"os"

	"golang.org/x/sys/unix"

	"vibebrowser/mux/sys/osuser"
)

// walkDirFlags open the folders of a path walked one by one (no O_PATH here: they must be readable).
const walkDirFlags = unix.O_RDONLY

// openNoFollow opens path for reading without following any symlink on the way. Here (no per-thread
// credentials) the agent user's right to read it is checked on its names first.
func openNoFollow(path string, agent *osuser.User) (*os.File, error) {
	if agent != nil {
		if err := agent.MayRead(path); err != nil {
			return nil, refuseFile("%s is not readable by the store's agent user %s itself: %v", path, agent.Name, err)
		}
	}
	f, err := openWalk(path)
	if err != nil {
		return nil, fileOpenError(path, agent, err)
	}
	return f, nil
}
