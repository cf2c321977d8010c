package cli

import (
	"fmt"
	"io"
	"text/tabwriter"

	"vibebrowser/manager/api"
)

// StatusCmd prints the manager's picture.
type StatusCmd struct {
	JSON bool `help:"Print JSON: {stores, browsers, tasks}; a task names its store by id (store) and slug (store_slug)."`
}

// Run prints the status as JSON or as readable tables.
func (c *StatusCmd) Run(g *globals) error {
	st, err := g.client().Status(g.ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(st)
	}
	fmt.Fprintf(g.stdout, "manager %s (pid %d), home %s\n", st.Version, st.PID, st.Home)
	if st.BrowserUse != "" {
		fmt.Fprintf(g.stdout, "browser-use: %s\n", st.BrowserUse)
	} else {
		fmt.Fprintf(g.stdout, "browser-use: MISSING: %s\n", st.BrowserUseErr)
	}
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	host := ""
	if len(st.Hosts) > 0 {
		printHosts(g.stdout, st)
		host = "HOST\t"
	}
	fmt.Fprintln(w, "\nBROWSER\t"+host+"STATUS\tPID\tKEEPER\tPORT\tCLIENTS\tTABS\tIDLE")
	for _, b := range st.Browsers {
		if host != "" {
			fmt.Fprintf(w, "%s\t%s\t", b.Slug, orDash(b.Host))
		} else {
			fmt.Fprintf(w, "%s\t", b.Slug)
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", b.Status, dash(b.PID), dash(b.KeeperPID), dash(b.ProxyPort), b.Clients, b.Tabs, idle(b.IdleS, b.Status))
	}
	w.Flush()
	for _, s := range st.Stores {
		if s.ProxyError != "" {
			fmt.Fprintf(g.stdout, "\nstore %s: its proxy %s fails: %s; check it with vibe-browser doctor, "+
				"or change it: vibe-browser store set %s --proxy URL\n", s.Slug, s.Proxy, s.ProxyError, s.Slug)
		}
	}
	if len(st.Tasks) > 0 {
		fmt.Fprintln(w, "\nTASK\tSTORE\tSTATUS\tLEASE UNTIL")
		for _, t := range st.Tasks {
			lease := "-"
			if !t.LeaseUntil.IsZero() {
				lease = t.LeaseUntil.Local().Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", t.ID, orDash(taskStore(t)), t.Status, lease)
		}
		w.Flush()
	}
	if n := len(st.Handoffs); n > 0 {
		fmt.Fprintf(g.stdout, "\n%s waiting for a person (answer with vibe-browser handoff done ID):\n", plural(n, "handoff"))
		printHandoffs(g.stdout, st.Handoffs, false)
	} else {
		fmt.Fprintln(g.stdout, "\nno handoff is waiting for a person")
	}
	return nil
}

// taskStore names a task's store by its slug; by its id only when the manager knew no slug for it.
func taskStore(t api.Task) string {
	if t.StoreSlug != "" {
		return t.StoreSlug
	}
	return t.Store
}

func dash(n int) string {
	if n == 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func idle(s int, status string) string {
	if status != "running" {
		return "-"
	}
	return fmt.Sprintf("%ds", s)
}

// printHosts lists the cluster's hosts (SPEC §19 "One pane"): each live or unreachable, and why.
func printHosts(out io.Writer, st api.Status) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "\nHOST\tSTATE\tFREE MB\tRUNNING\tSILENT")
	var why []string
	for _, h := range st.Hosts {
		name, state := h.Name, "live"
		if h.Name == st.Host {
			name += " (this host)"
		}
		if !h.Reachable() {
			state = "UNREACHABLE"
			why = append(why, fmt.Sprintf("host %s is unreachable: %s; its stores move to the live hosts once it "+
				"has been silent for the host TTL (run vibe-browser status on it)", h.Name, orDash(h.Unreachable)))
		}
		fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%.1fs\n", name, state, h.FreeMemMB, len(h.Stores), float64(h.QuietMs)/1000)
	}
	w.Flush()
	for _, line := range why {
		fmt.Fprintln(out, line)
	}
}
