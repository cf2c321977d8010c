package cdpwire

// maxSunPath is the longest socket path every supported system takes in a sockaddr_un: 104 bytes on macOS
// (108 on Linux), less the terminating NUL.
const maxSunPath = 103

// SockAddr is a name for the unix socket at path that fits a sockaddr_un, for bind and connect alike: path
// itself when short enough, else on Linux /proc/self/fd/N/<name> through a descriptor of path's directory,
// which release closes once the bind or connect is done. A home deep enough to need it is common in tests
// and in service accounts' homes; the socket's own name is fixed by the layout (run/keep-<key>.sock).
func SockAddr(path string) (addr string, release func(), err error) {
	if len(path) <= maxSunPath {
		return path, func() {}, nil
	}
	return viaDirFD(path)
}
