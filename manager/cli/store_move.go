package cli

import (
	"fmt"
	"text/tabwriter"

	"vibebrowser/manager/api"
)

// StoreMoveCmd moves a store to another host of the cluster.
type StoreMoveCmd struct {
	Store string `arg:"" help:"Store name, slug or id."`
	To    string `required:"" help:"The host it moves to (a live host of the cluster; vibe-browser status lists them)." placeholder:"HOST"`
	JSON  bool   `help:"Print JSON: {store,name,from,to,snapshot_at,checkpoint_at,stopped,took_ms}."`
}

// Run moves the store and prints where it went, with the login state it carries.
func (c *StoreMoveCmd) Run(g *globals) error {
	m, err := g.client().MoveStore(g.ctx, c.Store, c.To)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(m)
	}
	from := m.From
	if from == "" {
		from = "no host yet"
	}
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "moved store %s from host %s to host %s (its browser launches there at the next call)\n", m.Name, from, m.To)
	fmt.Fprintf(w, "checkpoint\t%s\n", agoOr(m.CheckpointAt, "none (no cookie checkpoint yet)"))
	fmt.Fprintf(w, "snapshot\t%s\n", agoOr(m.SnapshotAt, "none (no snapshot yet)"))
	if m.From != "" {
		fmt.Fprintf(w, "took\t%d ms (browser %s)\n", m.TookMs, stoppedWord(m))
	}
	return w.Flush()
}

func stoppedWord(m api.StoreMoved) string {
	if m.Stopped {
		return "stopped cleanly on " + m.From
	}
	return "was not running"
}
