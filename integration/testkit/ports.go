package testkit

// The ports of the managers tests start. The packages' test binaries run side by side (go test -p 2), so each
// has a band of its own, all below Linux's ephemeral ports (32768 and up), where a restarted manager finds its
// ports free, not taken by some connection's local end: the end-to-end tests' managers take ranges of
// [EndToEndPortsLow, EndToEndPortsHigh), the packages' own tests fixed bases above it.
const (
	EndToEndPortsLow, EndToEndPortsHigh = 10000, 30000

	DaemonPortBase  = 30100 // the manager package's daemons
	ManagerPortBase = 30600 // the manager package's managers that do not serve
	FleetPortBase   = 31100 // manager/browsers' fleets
)
