// Package sockowner tells which user owns the other end of a loopback TCP connection, as the kernel's socket
// table says: the proxy forwarder (SPEC §16) and the mux endpoint's store-token URLs (SPEC §20) serve only
// certain uids.
package sockowner

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
)

// Unknown is what Of answers where the owner cannot be read (no /proc: every system but Linux); a caller
// that must decide serves the connection, as it did before the owner was checked.
const Unknown = -2

// Of is the uid owning the peer's end of c, a loopback TCP connection.
func Of(c net.Conn) (int, error) { return OfAddrs(c.LocalAddr(), c.RemoteAddr()) }

// OfRequest is the uid owning the peer's end of r's connection (a request of a net/http server).
func OfRequest(r *http.Request) (int, error) {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return 0, errors.New("the request carries no local address: not from a net/http server")
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return 0, err
	}
	return OfAddrs(local, net.TCPAddrFromAddrPort(peer))
}
