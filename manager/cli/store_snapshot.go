package cli

import (
	"fmt"
	"text/tabwriter"
	"time"

	"vibebrowser/manager/api"
)

// StoreSnapshotCmd takes a snapshot of a store's profile now (SPEC §18).
type StoreSnapshotCmd struct {
	Store string `arg:"" help:"Store name, slug or id, or web for the web browser."`
	JSON  bool   `help:"Print JSON: {id,at,kind,size,path}."`
}

// Run takes the snapshot and prints it.
func (c *StoreSnapshotCmd) Run(g *globals) error {
	s, err := g.client().TakeSnapshot(g.ctx, c.Store)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(s)
	}
	fmt.Fprintf(g.stdout, "snapshot %s (%s, %s)\n%s\n", s.ID, s.Kind, sizeWords(s.Size), s.Path)
	if s.Kind == "live" {
		fmt.Fprintln(g.stderr, "vibe-browser: the browser runs, so this snapshot holds its cookie checkpoint and settings "+
			"files, and its databases as the snapshot before holds them; a stopped browser's is whole")
	}
	return nil
}

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

// ageWords is how long ago t was, to the second (to the minute past an hour); "never" for the zero time.
func ageWords(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := time.Since(t)
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd%s", int(d/(24*time.Hour)), (d % (24 * time.Hour)).Round(time.Hour))
}

// sizeWords is n bytes in B, KiB or MiB.
func sizeWords(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// loginLines are store show's lines of SPEC §18: the newest checkpoint's and snapshot's ages.
func loginLines(w *tabwriter.Writer, s api.Store) {
	fmt.Fprintf(w, "checkpoint\t%s\n", agoOr(s.CheckpointAt, "none yet (the cookie jar is checkpointed while the browser runs)"))
	if s.Backend == "chrome" {
		fmt.Fprintf(w, "snapshot\t%s\n", agoOr(s.SnapshotAt, "none yet (one is taken at each clean stop; vibe-browser store snapshot "+s.Slug+")"))
	}
}

func agoOr(t time.Time, none string) string {
	if t.IsZero() {
		return none
	}
	return ageWords(t) + " ago (" + t.Local().Format(time.DateTime) + ")"
}
