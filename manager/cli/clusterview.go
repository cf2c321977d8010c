package cli

import (
	"fmt"
	"text/tabwriter"

	"vibebrowser/manager/api"
)

// Where a store runs, as `store list` and `store show` say it in a cluster (SPEC §19 "One pane"): its host,
// and its browser as that host runs it (status's browsers[], which the answering host asked of it), never this
// host's view of a browser it does not run.

// browserOn is the state of the store key's browser on its host, "unreachable on H" when that host did not
// answer, and the host; "" for the host in a single host's status.
func browserOn(st api.Status, key, local string) (status, host string) {
	status = local
	for _, b := range st.Browsers {
		if b.Key == key {
			status, host = b.Status, b.Host
		}
	}
	if st.Host == "" || host == "" || host == st.Host {
		return status, host
	}
	for _, h := range st.Hosts {
		if h.Name == host && !h.Reachable() {
			return "unreachable on " + host, host
		}
	}
	return status + " on " + host, host
}

// storeHostLine is `store show`'s host line: a store placed on another host answers its token's URLs there only.
func storeHostLine(w *tabwriter.Writer, s api.Store, here string) {
	if s.Host == "" {
		return
	}
	if s.Host == here || here == "" {
		fmt.Fprintf(w, "host\t%s\n", s.Host)
		return
	}
	fmt.Fprintf(w, "host\t%s (its browser runs there; cdp_http and cdp_ws answer only on %s: run vibe-browser store show there; "+
		"agents here use vibe-browser endpoint or the wrapper, which reach it through the door)\n", s.Host, s.Host)
}
