package doctor

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Free space below which the home's disk is a warning, and a failure: Chromium profiles grow by hundreds of
// megabytes, and SQLite refuses writes on a full disk.
const (
	diskWarnBytes = 2 << 30
	diskFailBytes = 200 << 20
)

// disk reports the free space where the home lives (its nearest existing parent before serve creates it).
func disk(dir string) Check {
	for {
		if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) || filepath.Dir(dir) == dir {
			break
		}
		dir = filepath.Dir(dir)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return warn("disk", "free space of "+dir+": "+err.Error(), "check that its disk is mounted and readable by this user")
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	detail := fmt.Sprintf("%s free on the disk of %s", bytesText(free), dir)
	switch {
	case free < diskFailBytes:
		return fail("disk", detail, "free space on that disk, or set VIBE_HOME to a directory on a larger one")
	case free < diskWarnBytes:
		return warn("disk", detail+"; Chromium profiles need hundreds of MiB each", "free space on that disk")
	}
	return ok("disk", detail)
}

func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%d MiB", n>>20)
	}
}
