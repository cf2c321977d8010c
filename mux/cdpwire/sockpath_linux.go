package cdpwire

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// viaDirFD names path as /proc/self/fd/N/<name>, N a descriptor of its directory that release closes.
func viaDirFD(path string) (string, func(), error) {
	fd, err := unix.Open(filepath.Dir(path), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, &os.PathError{Op: "open", Path: filepath.Dir(path), Err: err}
	}
	addr := "/proc/self/fd/" + strconv.Itoa(fd) + "/" + filepath.Base(path)
	if len(addr) > maxSunPath {
		unix.Close(fd)
		return "", nil, fmt.Errorf("socket name %s is too long for a unix socket", filepath.Base(path))
	}
	return addr, func() { unix.Close(fd) }, nil
}
