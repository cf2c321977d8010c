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
