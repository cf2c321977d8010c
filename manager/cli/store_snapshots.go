package cli

import (
	"fmt"
	"text/tabwriter"
	"time"
)

// StoreSnapshotsCmd lists a store's snapshots.
type StoreSnapshotsCmd struct {
	Store string `arg:"" help:"Store name, slug or id, or web for the web browser."`
	JSON  bool   `help:"Print JSON: [{id,at,kind,size,path}], newest first."`
}

// Run lists the snapshots, newest first.
func (c *StoreSnapshotsCmd) Run(g *globals) error {
	all, err := g.client().StoreSnapshots(g.ctx, c.Store)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(all)
	}
	if len(all) == 0 {
		fmt.Fprintf(g.stdout, "no snapshot of %s yet: one is taken at each clean stop of its browser, or now with "+
			"vibe-browser store snapshot %s\n", c.Store, c.Store)
		return nil
	}
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "ID\tTAKEN\tAGE\tKIND\tSIZE")
	for _, s := range all {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.ID, s.At.Local().Format(time.DateTime), ageWords(s.At), s.Kind, sizeWords(s.Size))
	}
	return w.Flush()
}
