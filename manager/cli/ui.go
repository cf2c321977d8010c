package cli

import (
	"fmt"
	"os/exec"
	"runtime"
)

// UICmd prints (or opens) a one-time login link to the manager's web UI.
type UICmd struct {
	Open bool `help:"Open the link in the default web browser (xdg-open on Linux, open on macOS)."`
	JSON bool `help:"Print JSON: {url, code, expires_at}."`
}

// Run asks the manager for a login code over its socket (so only this user can) and prints its URL.
func (c *UICmd) Run(g *globals) error {
	login, err := g.client().UILogin(g.ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		if err := g.printJSON(login); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.stdout, "%s\n(works once, until %s)\n", login.URL, login.ExpiresAt.Local().Format("15:04:05"))
	}
	if !c.Open {
		return nil
	}
	return openURL(g, login.URL)
}

// openURL opens a login link in the person's default web browser.
func openURL(g *globals, url string) error {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	if out, err := exec.CommandContext(g.ctx, opener, url).CombinedOutput(); err != nil {
		return fmt.Errorf("could not open the link with %s (%v%s); open the URL above in a web browser on this "+
			"machine yourself, within a minute", opener, err, trimmed(out))
	}
	return nil
}

func trimmed(out []byte) string {
	if len(out) == 0 {
		return ""
	}
	return ": " + string(out)
}
