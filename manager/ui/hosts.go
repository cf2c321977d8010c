package ui

import (
	"fmt"
	"strconv"
	"time"

	"vibebrowser/manager/api"
)

// The overview's hosts (SPEC §19 "One pane"): in a cluster, every host as this host sees it, live or
// unreachable, with its free memory and its stores, and for one that is unreachable why and what to do. Its
// stores' rows say "host unreachable" instead of a browser state nobody could tell.

// hostRow is one host of the overview's hosts strip.
type hostRow struct {
	Name    string
	Self    bool   // the host whose UI this is
	State   string // "live" or "unreachable"
	Away    bool   // unreachable
	Free    string // its free memory, "3.1 GB free"
	Stores  string // "2 stores · 1 running"
	Problem string // why it is unreachable, for a person
	Fix     string // what to do about it
}

// hostRows are st's hosts for the overview, and the names of those unreachable. movesAfter is how long a
// silent host keeps its stores.
func hostRows(st api.Status, movesAfter time.Duration) ([]hostRow, map[string]bool) {
	placed := map[string]int{}
	for _, s := range st.Stores {
		placed[s.Host]++
	}
	rows := []hostRow{}
	away := map[string]bool{}
	for _, h := range st.Hosts {
		row := hostRow{Name: h.Name, Self: h.Name == st.Host, State: "live", Free: freeMemory(h.FreeMemMB),
			Stores: plural(placed[h.Name], "store") + " · " + strconv.Itoa(len(h.Stores)) + " running"}
		if !h.Reachable() {
			quiet := duration(time.Duration(h.QuietMs) * time.Millisecond)
			away[h.Name] = true
			row.State, row.Away = "unreachable", true
			row.Stores += " at its last heartbeat, " + quiet + " ago"
			row.Problem = "Unreachable: " + h.Unreachable + "."
			if h.Unreachable == "" {
				row.Problem = "Unreachable: no heartbeat for " + quiet + "."
			}
			row.Fix = "Its stores' pages cannot be shown until it answers. After " + duration(movesAfter) +
				" of silence its stores move to the live hosts (each starts at an agent's next call, with its newest " +
				"login). Check its manager: vibe-browser status on " + h.Name + "."
		}
		rows = append(rows, row)
	}
	return rows, away
}

// freeMemory is a host's free memory for a person: "850 MB free", "3.1 GB free".
func freeMemory(mb int64) string {
	switch {
	case mb <= 0:
		return "free memory unknown"
	case mb < 1024:
		return strconv.FormatInt(mb, 10) + " MB free"
	}
	return fmt.Sprintf("%.1f GB free", float64(mb)/1024)
}
