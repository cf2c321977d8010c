//go:build !(linux && cgo)

package state

// tuneMalloc has nothing to set: the allocator it tunes is glibc's (malloc_linux.go).
func tuneMalloc() {}
