//go:build !unix

package mux

import "net"

// writeNonBlocking leaves every byte to the writer goroutine where a non-blocking socket write is not
// available.
func writeNonBlocking(net.Conn, []byte) (int, error) { return 0, nil }
