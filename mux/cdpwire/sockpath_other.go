//go:build !linux

package cdpwire

import "fmt"

// viaDirFD has no short form to offer outside Linux.
func viaDirFD(path string) (string, func(), error) {
	return "", nil, fmt.Errorf("socket path %s is %d bytes, over the %d a unix socket takes here: use a shorter VIBE_HOME", path, len(path), maxSunPath)
}
