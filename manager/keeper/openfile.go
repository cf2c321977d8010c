package keeper

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// maxFileSize bounds what the manager reads of an identity or status file: each is a few hundred bytes.
const maxFileSize = 1 << 20

// OpenLog opens a keeper's log for reading. A keeper run as a store's browser user (SPEC §14) owns its
// folder and everything in it, and the manager that reads them is root: a symlink there is not followed (it
// would read any file of root's) and a FIFO is not waited on (it would hang the reader), so anything but a
// regular file is refused.
func OpenLog(path string) (*os.File, error) { return openRegular(path) }

// openRegular opens path for reading, refusing a symlink and anything that is not a regular file, without
// blocking on a FIFO.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s): a keeper writes only regular files there", path, fi.Mode().Type())
	}
	return f, nil
}

// readSmall reads a keeper's identity or status file as openRegular opens it, at most maxFileSize bytes.
func readSmall(path string) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err == nil && len(b) > maxFileSize {
		err = fmt.Errorf("%s is larger than %d bytes: not a keeper's file", path, maxFileSize)
	}
	return b, err
}
