package cli

import "fmt"

// StoreLoginCmd opens a human tab in a store's browser and prints (or opens) the link to its live view:
// how a person logs a store in on a machine with no display.
type StoreLoginCmd struct {
	Store string `arg:"" help:"The store's name, slug or id."`
	URL   string `name:"url" help:"Where the tab opens (http:// or https://; a bare host gets https://). Default: a blank tab."`
	Open  bool   `help:"Open the link in the default web browser (xdg-open on Linux, open on macOS)."`
	JSON  bool   `help:"Print JSON: {url, code, expires_at, store, tab}."`
}

// Run asks the manager to start the store's browser if needed and open the tab, then prints the link.
func (c *StoreLoginCmd) Run(g *globals) error {
	login, err := g.client().StoreLogin(g.ctx, c.Store, c.URL)
	if err != nil {
		return err
	}
	if c.JSON {
		if err := g.printJSON(login); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(g.stdout, "%s\n(opens the live view of a new tab of your own in %s; works once, until %s)\n",
			login.URL, login.Store, login.ExpiresAt.Local().Format("15:04:05"))
	}
	if !c.Open {
		return nil
	}
	return openURL(g, login.URL)
}
