package cli

import (
	"fmt"
	"text/tabwriter"

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

// WebCmd starts, stops or shows the store-less web browser.
type WebCmd struct {
	Action string `arg:"" enum:"start,stop,show" help:"start, stop, or show (its state and endpoints; starts nothing)."`
	JSON   bool   `help:"Print JSON: {key,slug,status,pid,proxy_port,…,cdp_http,cdp_ws}."`
}

// Run starts, stops or shows the web browser, and prints it with its endpoints.
func (c *WebCmd) Run(g *globals) error {
	var b api.WebBrowser
	var err error
	if c.Action == "show" {
		b, err = g.client().Web(g.ctx)
	} else {
		b, err = g.client().WebBrowser(g.ctx, c.Action)
	}
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(b)
	}
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "port\t%d\ncdp_http\t%s\ncdp_ws\t%s\nbrowser\t%s\n", b.ProxyPort, b.CDPHTTP, b.CDPWS, b.Status)
	if b.PID > 0 {
		fmt.Fprintf(w, "pid\t%d\n", b.PID)
	}
	return w.Flush()
}
