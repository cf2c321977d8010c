package cli

import (
	"fmt"
	"time"
)

// StoreRestoreCmd replaces a stopped store's profile and checkpoint with a snapshot's.
type StoreRestoreCmd struct {
	Store    string `arg:"" help:"Store name, slug or id, or web for the web browser."`
	Snapshot string `help:"The snapshot's ID (or the start of one) from vibe-browser store snapshots; default the newest." placeholder:"ID"`
	JSON     bool   `help:"Print JSON: {snapshot,files,checkpoint,profile}."`
}

// Run restores the snapshot; the manager refuses while the store's browser runs.
func (c *StoreRestoreCmd) Run(g *globals) error {
	r, err := g.client().RestoreSnapshot(g.ctx, c.Store, c.Snapshot)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(r)
	}
	cp := "with the cookie checkpoint it holds"
	if !r.Checkpoint {
		cp = "which holds no cookie checkpoint: the store has none now"
	}
	fmt.Fprintf(g.stdout, "restored snapshot %s (taken %s, %s ago) into %s: %d files, %s\nthe next start of the browser is that state\n",
		r.Snapshot.ID, r.Snapshot.At.Local().Format(time.DateTime), ageWords(r.Snapshot.At), r.Profile, r.Files, cp)
	return nil
}
