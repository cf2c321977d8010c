package sockowner

import (
	"bufio"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strconv"
	"strings"
)

// OfAddrs is the uid owning the socket at peer connected to local: the /proc/net/tcp (or tcp6) entry whose
// local address is peer and whose remote address is local.
func OfAddrs(local, peer net.Addr) (int, error) {
	l, err1 := netip.ParseAddrPort(local.String())
	p, err2 := netip.ParseAddrPort(peer.String())
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("not a TCP connection: %s", peer)
	}
	table := "/proc/net/tcp"
	if p.Addr().Unmap().Is6() {
		table = "/proc/net/tcp6"
	}
	f, err := os.Open(table)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		fl, errL := parseProcAddr(fields[1])
		fr, errR := parseProcAddr(fields[2])
		if errL != nil || errR != nil || fl != unmapped(p) || fr != unmapped(l) {
			continue
		}
		return strconv.Atoi(fields[7])
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("no socket of %s in %s", p, table)
}

func unmapped(a netip.AddrPort) netip.AddrPort { return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()) }

// parseProcAddr reads /proc/net/tcp's "0100007F:1F90": the address as the kernel's 32-bit words in host
// (little-endian) order, then the port in hex.
func parseProcAddr(s string) (netip.AddrPort, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if !ok || err != nil || (len(hexAddr) != 8 && len(hexAddr) != 32) {
		return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
	}
	b := make([]byte, len(hexAddr)/2)
	for i := range b {
		v, err := strconv.ParseUint(hexAddr[2*i:2*i+2], 16, 8)
		if err != nil {
			return netip.AddrPort{}, fmt.Errorf("bad address %q", s)
		}
		b[i] = byte(v)
	}
	for w := 0; w < len(b); w += 4 { // each 32-bit word is little-endian
		b[w], b[w+1], b[w+2], b[w+3] = b[w+3], b[w+2], b[w+1], b[w]
	}
	addr, _ := netip.AddrFromSlice(b)
	return netip.AddrPortFrom(addr.Unmap(), uint16(port)), nil
}
