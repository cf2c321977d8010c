//go:build unix

package mux

import (
	"io/fs"
	"syscall"
)

// fileIdentity is fi's device, inode and link count.
func fileIdentity(fi fs.FileInfo) (fileID, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino, links: uint64(st.Nlink)}, true
}
