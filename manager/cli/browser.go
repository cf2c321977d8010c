package cli

import (
	"fmt"

	"vibebrowser/manager/api"
)

// BrowserCmd starts or stops a store's browser.
type BrowserCmd struct {
	Start BrowserStartCmd `cmd:"" help:"Start the store's browser (clears its relaunch budget)."`
	Stop  BrowserStopCmd  `cmd:"" help:"Stop the store's browser."`
}

// BrowserStartCmd starts a store's browser.
type BrowserStartCmd struct {
	Store string `arg:"" help:"Store name, slug or id."`
	JSON  bool   `help:"Print the store as JSON."`
}

// Run starts the browser.
func (c *BrowserStartCmd) Run(g *globals) error {
	s, err := g.client().StoreBrowser(g.ctx, c.Store, api.ActionStart)
	if err != nil {
		return err
	}
	return printStore(g, s, c.JSON)
}

// BrowserStopCmd stops a store's browser.
type BrowserStopCmd struct {
	Store string `arg:"" help:"Store name, slug or id."`
}

// Run stops the browser.
func (c *BrowserStopCmd) Run(g *globals) error {
	if _, err := g.client().StoreBrowser(g.ctx, c.Store, api.ActionStop); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "stopped the browser of %s\n", c.Store)
	return nil
}

// WebCmd starts or stops the store-less web browser.
type WebCmd struct {
	Action string `arg:"" enum:"start,stop" help:"start or stop."`
	JSON   bool   `help:"Print JSON."`
}

// Run starts or stops the web browser.
func (c *WebCmd) Run(g *globals) error {
	b, err := g.client().WebBrowser(g.ctx, c.Action)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(b)
	}
	fmt.Fprintf(g.stdout, "web browser %s (pid %d, port %d)\n", b.Status, b.PID, b.ProxyPort)
	return nil
}
