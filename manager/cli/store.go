package cli

import (
	"fmt"
	"text/tabwriter"

	"vibebrowser/manager/api"
)

// StoreCmd groups the store commands.
type StoreCmd struct {
	Add   StoreAddCmd   `cmd:"" help:"Add a store (one logged-in browser)."`
	List  StoreListCmd  `cmd:"" help:"List stores."`
	Show  StoreShowCmd  `cmd:"" help:"Show one store, with its CDP endpoints."`
	Rm    StoreRmCmd    `cmd:"" help:"Remove a store: stop its browser, remove its wrapper and port."`
	Login StoreLoginCmd `cmd:"" help:"Open a tab of your own in the store's browser and print the web UI link that shows it (log a store in on a headless machine)."`
}

// StoreAddCmd adds a store.
type StoreAddCmd struct {
	Name     string `arg:"" help:"Store name (any printable text up to 100 characters)."`
	Backend  string `help:"chrome, ziniao or cdp." default:"chrome" enum:"chrome,ziniao,cdp"`
	CDPURL   string `name:"cdp-url" help:"cdp backend: the browser's endpoint (http://host:port or ws://…)."`
	Headless bool   `help:"Run the browser headless." xor:"mode"`
	Headed   bool   `help:"Run the browser with a window." xor:"mode"`
	JSON     bool   `help:"Print the store as JSON."`

	ZiniaoBrowser  string `name:"ziniao-browser" help:"ziniao backend: the environment's browserOauth or browserId."`
	ZiniaoCompany  string `name:"ziniao-company" help:"ziniao backend: the account's company."`
	ZiniaoUsername string `name:"ziniao-username" help:"ziniao backend: the account's username."`
	ZiniaoPassword string `name:"ziniao-password" env:"VIBE_ZINIAO_PASSWORD" help:"ziniao backend: the account's password (better passed in VIBE_ZINIAO_PASSWORD)."`
	ZiniaoPort     int    `name:"ziniao-port" help:"ziniao backend: the Ziniao client's HTTP port (default 16851)."`
}

// Run adds the store and prints it.
func (c *StoreAddCmd) Run(g *globals) error {
	spec := api.StoreSpec{Name: c.Name, Backend: c.Backend, CDPURL: c.CDPURL}
	if c.Headless || c.Headed {
		spec.Headless = &c.Headless
	}
	if c.Backend == "ziniao" {
		spec.Ziniao = &api.ZiniaoSpec{Browser: c.ZiniaoBrowser, Company: c.ZiniaoCompany, Username: c.ZiniaoUsername,
			Password: c.ZiniaoPassword, Port: c.ZiniaoPort}
	}
	s, err := g.client().CreateStore(g.ctx, spec)
	if err != nil {
		return err
	}
	return printStore(g, s, c.JSON)
}

// StoreListCmd lists stores.
type StoreListCmd struct {
	JSON bool `help:"Print JSON."`
}

// Run lists the stores.
func (c *StoreListCmd) Run(g *globals) error {
	stores, err := g.client().ListStores(g.ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(stores)
	}
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "NAME\tSLUG\tBACKEND\tPORT\tBROWSER\tID")
	for _, s := range stores {
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Slug, s.Backend, s.ProxyPort, s.Browser.Status, s.ID)
	}
	return w.Flush()
}

// StoreShowCmd shows one store.
type StoreShowCmd struct {
	Store string `arg:"" help:"Store name, slug or id."`
	JSON  bool   `help:"Print JSON: {id,name,slug,backend,proxy_port,cdp_http,cdp_ws,browser:{status,pid}}."`
}

// Run prints the store.
func (c *StoreShowCmd) Run(g *globals) error {
	s, err := g.client().GetStore(g.ctx, c.Store)
	if err != nil {
		return err
	}
	return printStore(g, s, c.JSON)
}

// StoreRmCmd removes a store.
type StoreRmCmd struct {
	Store string `arg:"" help:"Store name, slug or id."`
}

// Run removes the store.
func (c *StoreRmCmd) Run(g *globals) error {
	if err := g.client().DeleteStore(g.ctx, c.Store); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "removed store %s\n", c.Store)
	return nil
}

func printStore(g *globals, s api.Store, asJSON bool) error {
	if asJSON {
		return g.printJSON(s)
	}
	w := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "name\t%s\nslug\t%s\nid\t%s\nbackend\t%s\nport\t%d\ncdp_http\t%s\ncdp_ws\t%s\nbrowser\t%s\n",
		s.Name, s.Slug, s.ID, s.Backend, s.ProxyPort, s.CDPHTTP, s.CDPWS, s.Browser.Status)
	if s.Browser.PID > 0 {
		fmt.Fprintf(w, "pid\t%d\n", s.Browser.PID)
	}
	if s.Wrapper != "" {
		fmt.Fprintf(w, "wrapper\t%s\n", s.Wrapper)
	}
	return w.Flush()
}
