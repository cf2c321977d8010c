package cli

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"vibebrowser/manager/api"
)

// The cluster as the tables show it (SPEC §19 "One pane"): which hosts there are and which are alive, and on
// which host each store is placed and runs. A single host's status has no Host, and its tables stay as they were.

// printHosts prints the cluster's hosts: alive or not (silent since when), free memory, the stores they run
// and their doors.
func printHosts(out io.Writer, st api.Status) {
	if st.Host == "" {
		return
	}
	fmt.Fprintf(out, "host %s of a cluster of %s\n", st.Host, plural(len(st.Hosts), "host"))
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "HOST\tSTATE\tFREE MEM\tSTORES RUNNING\tDOOR")
	for _, h := range st.Hosts {
		state, running := "alive", fmt.Sprint(len(h.Stores))
		if !h.Alive {
			state = "UNREACHABLE (silent " + (time.Duration(h.QuietMs) * time.Millisecond).Round(time.Second).String() + ")"
			running = "-" // its last heartbeat's list is no news of them
		}
		name := h.Name
		if name == st.Host {
			name += " (this one)"
		}
		fmt.Fprintf(w, "%s\t%s\t%d MiB\t%s\t%s\n", name, state, h.FreeMemMB, running, h.Advertise)
	}
	w.Flush()
	for _, h := range st.Hosts {
		if !h.Alive {
			fmt.Fprintf(out, "host %s is unreachable: its stores move to live hosts once their leases lapse (10 s); "+
				"if it should be up, check its manager (vibe-browser status there) and its network to the others\n", h.Name)
		}
	}
}

// hostOf is where the store with id key is placed, and its browser's state there as the placing host's
// heartbeat tells it; "" when st is a single host's, or the store is placed on this host (its own row says).
func hostOf(st api.Status, key string) (host, state string) {
	if st.Host == "" {
		return "", ""
	}
	for _, s := range st.Stores {
		if s.ID != key || s.Host == "" || s.Host == st.Host {
			continue
		}
		for _, h := range st.Hosts {
			switch {
			case h.Name != s.Host:
			case !h.Alive:
				return s.Host, "unreachable"
			case slices.Contains(h.Stores, key):
				return s.Host, "running"
			default:
				return s.Host, "stopped"
			}
		}
		return s.Host, "unknown host"
	}
	return "", ""
}

// browserRow is a browser's STATUS and HOST cells: a store placed on another host has its state there, not
// this host's (where its browser never runs).
func browserRow(st api.Status, b api.Browser) (status, host string) {
	if h, state := hostOf(st, b.Key); h != "" {
		return state + " on " + h, h
	}
	return b.Status, st.Host
}

// storeHostLine is `store show`'s host line, with where its store token's URLs are served.
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
