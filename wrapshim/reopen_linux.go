package wrapshim

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// reopenForRead opens the file f is open on, for reading, as a new open file (its own offset): through
// /proc/self/fd, which reaches the file itself, not its name. It must be the same file as st says.
func reopenForRead(f *os.File, st *unix.Stat_t) (*os.File, error) {
	r, err := os.Open("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil {
		return nil, err
	}
	var got unix.Stat_t
	if err := unix.Fstat(int(r.Fd()), &got); err != nil || got.Dev != st.Dev || got.Ino != st.Ino {
		r.Close()
		return nil, errors.New("it is another file now")
	}
	return r, nil
}
