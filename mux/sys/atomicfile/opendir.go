package atomicfile

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// OpenDir opens dir itself, refusing a symlink or anything else that is not a folder: a caller that changes a
// folder another user owns (chown, chmod) does it through this descriptor, so nothing that user plants there
// leads it anywhere else.
func OpenDir(dir string) (*os.File, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%s must be a folder of its own, not a symlink: %w", dir, err)
	}
	return os.NewFile(uintptr(fd), dir), nil
}
