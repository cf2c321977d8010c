package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"vibebrowser/manager/api"
	"vibebrowser/manager/untrusted"
	"vibebrowser/mux/clientid"
)

// DownloadsCmd lists finished downloads (SPEC §12).
type DownloadsCmd struct {
	Task  string `help:"Only this task's downloads (its --worker slots included)." placeholder:"ID"`
	Store string `help:"Only this store's downloads (name, slug or id; web for the web browser)." placeholder:"STORE"`
	JSON  bool   `help:"Print JSON: [{id, store, slug, task, client, owner_dir, guid, url, name, path, size, sha256, at}]."`
}

// Run lists the downloads, oldest first.
func (c *DownloadsCmd) Run(g *globals) error {
	ds, err := g.client().ListDownloads(g.ctx, c.Task, c.Store)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(ds)
	}
	if len(ds) == 0 {
		_, err := fmt.Fprintln(g.stdout, "no downloads")
		return err
	}
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TIME\tSTORE\tOWNER\tSIZE\tSHA256\tPATH")
	for _, d := range ds {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%.12s\t%s\n", d.At.Local().Format("2006-01-02 15:04:05"), orDash(d.Slug),
			owner(d), d.Size, d.SHA256, untrusted.Terminal(d.Path)) // a page names the file
	}
	return w.Flush()
}

// owner names whose download d is: its folder, and for a --worker slot (client <task>-wN, filed in its
// task's folder) the slot too, "<task> w2", so it can be told from its task's own.
func owner(d api.Download) string {
	if slot, ok := strings.CutPrefix(d.Client, d.OwnerDir+"-"); ok && d.OwnerDir != "" && clientid.OwnerDir(d.Client) == d.OwnerDir {
		return d.OwnerDir + " " + slot
	}
	return d.OwnerDir
}
