package cli

import "vibebrowser/manager/keeper"

// KeepCmd is `vibe-browser keep`, the keeper of a launched Chromium's DevTools pipe (SPEC §13). The manager
// starts it; nobody types it, so it is hidden. Everything after `keep` is the keeper's own argv
// (keeper.Command), unparsed here.
type KeepCmd struct {
	Args []string `arg:"" optional:"" help:"The keeper's flags, then -- and Chromium's command line."`
}

// Run runs the keeper; its exit code becomes the process's (Chromium's status, passed on).
func (c *KeepCmd) Run(g *globals) error {
	if code := keeper.Main(c.Args); code != 0 {
		return &exitCodeError{code: code}
	}
	return nil
}
