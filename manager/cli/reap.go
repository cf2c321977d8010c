package cli

import (
	"fmt"
	"strings"
)

// ReapCmd runs one daemon-reaper pass now.
type ReapCmd struct {
	JSON bool `help:"Print JSON: {killed, removed, kept}."`
}

// Run asks the manager for a reaper pass and prints what it did.
func (c *ReapCmd) Run(g *globals) error {
	res, err := g.client().Reap(g.ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(res)
	}
	fmt.Fprintf(g.stdout, "killed: %s\nremoved: %s\nkept: %s\n", list(res.Killed), list(res.Removed), list(res.Kept))
	return nil
}

func list(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, " ")
}
