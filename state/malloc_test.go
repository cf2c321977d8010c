//go:build linux && cgo

package state

import "testing"

// An open state keeps what SQLite frees for its next malloc instead of giving it back to the kernel and
// faulting it in again (tuneMalloc).
func TestOpenKeepsFreedCMemory(t *testing.T) {
	openTest(t)
	if !freedStays(4 << 20) {
		t.Error("4 MiB that C freed in small blocks went back to the kernel; want them kept for the next malloc")
	}
}
