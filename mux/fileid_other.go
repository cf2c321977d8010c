//go:build !unix

package mux

import "io/fs"

// fileIdentity is unknown here: hard links are not looked for.
func fileIdentity(fs.FileInfo) (fileID, bool) { return fileID{}, false }
