package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"vibebrowser/manager/doctor"
)

// DoctorCmd checks this machine and the manager running on its home.
type DoctorCmd struct {
	JSON bool `help:"Print JSON: a list of checks {name, status (ok, warn or fail), detail, fix}."`
}

// Run runs every check and prints one line each; a failed check makes the command fail (exit 1) after the
// whole report is printed.
func (c *DoctorCmd) Run(g *globals) error {
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		return fmt.Errorf("doctor: this binary's path: %w", err)
	}
	checks := doctor.Run(g.ctx, doctor.Options{Home: g.home, Getenv: os.Getenv, Version: Version, Exe: exe})
	if c.JSON {
		if err := g.printJSON(checks); err != nil {
			return err
		}
	} else {
		w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
		for _, ch := range checks {
			line := ch.Detail
			if ch.Fix != "" {
				line += "; fix: " + ch.Fix
			}
			fmt.Fprintf(w, "%s\t%s\t%s\n", strings.ToUpper(string(ch.Status)), ch.Name, line)
		}
		w.Flush()
	}
	if n := doctor.Failed(checks); n > 0 {
		return fmt.Errorf("doctor: %d of %d checks failed; each FAIL line names its fix", n, len(checks))
	}
	return nil
}
