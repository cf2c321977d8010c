package cli

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
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
	Set   StoreSetCmd   `cmd:"" help:"Change a store's settings: its proxy, time zone, language, window mode, agent and browser users, timeline."`

	Snapshot  StoreSnapshotCmd  `cmd:"" help:"Snapshot the store's profile now (sealed; also taken at each clean stop of its browser)."`
	Snapshots StoreSnapshotsCmd `cmd:"" help:"List the store's profile snapshots, newest first."`
	Restore   StoreRestoreCmd   `cmd:"" help:"Replace the store's profile and cookie checkpoint with a snapshot's (its browser stopped)."`
	Move      StoreMoveCmd      `cmd:"" help:"In a cluster: move the store to another host (its browser stops cleanly here, its login goes with it; the next call launches it there)."`
}

// StoreAddCmd adds a store.
type StoreAddCmd struct {
	Name     string `arg:"" help:"Store name (any printable text up to 100 characters)."`
	Backend  string `help:"chrome, ziniao or cdp." default:"chrome" enum:"chrome,ziniao,cdp"`
	CDPURL   string `name:"cdp-url" help:"cdp backend: the browser's endpoint (http://host:port or ws://…)."`
	Headless bool   `help:"Run the browser headless." xor:"mode"`
	Headed   bool   `help:"Run the browser with a window." xor:"mode"`
	JSON     bool   `help:"Print the store as JSON."`
	Host     string `help:"In a cluster: the host the store is placed on (its browser runs there); default the live host with the most free memory per store." placeholder:"HOST"`

	Proxy    string `help:"chrome backend: the store's upstream proxy, http://, https://, socks5:// or socks5h:// [user:password@]host:port (its own IP); - reads it from stdin, so its password is in no process's arguments." placeholder:"URL"`
	Timezone string `help:"chrome backend: the browser's IANA time zone, such as Europe/Berlin (match the proxy's region)." placeholder:"ZONE"`
	Lang     string `help:"chrome backend: the browser's language, a BCP 47 tag such as de-DE." placeholder:"TAG"`

	AgentUser   string `name:"agent-user" help:"The OS user the store's agents run as (vibe-browser agent drops to it): the store becomes an OS boundary; default VIBE_AGENT_USER; none for none. Needs a root manager." placeholder:"USER|none"`
	BrowserUser string `name:"browser-user" help:"chrome backend: the OS user its browser runs as; by default, when it has an agent user or a proxy, one the manager makes for it (vibe-b-<slug>), so no two stores share one. Needs a root manager." placeholder:"USER|none"`
	Timeline    string `help:"What its tasks' timelines record: full (code, output, screenshots), meta (the steps only) or off; default VIBE_TIMELINE." enum:",full,meta,off" default:""`

	ZiniaoBrowser  string `name:"ziniao-browser" help:"ziniao backend: the environment's browserOauth or browserId."`
	ZiniaoCompany  string `name:"ziniao-company" help:"ziniao backend: the account's company."`
	ZiniaoUsername string `name:"ziniao-username" help:"ziniao backend: the account's username."`
	ZiniaoPassword string `name:"ziniao-password" env:"VIBE_ZINIAO_PASSWORD" help:"ziniao backend: the account's password (better passed in VIBE_ZINIAO_PASSWORD)."`
	ZiniaoPort     int    `name:"ziniao-port" help:"ziniao backend: the Ziniao client's HTTP port (default 16851)."`
}

// Run adds the store and prints it.
func (c *StoreAddCmd) Run(g *globals) error {
	proxy, err := proxyArg(c.Proxy)
	if err != nil {
		return err
	}
	spec := api.StoreSpec{Name: c.Name, Backend: c.Backend, Host: c.Host, StoreSettings: api.StoreSettings{CDPURL: c.CDPURL,
		Proxy: proxy, Timezone: c.Timezone, Lang: c.Lang, AgentUser: c.AgentUser, BrowserUser: c.BrowserUser,
		Timeline: c.Timeline}}
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
	if !slices.ContainsFunc(stores, func(s api.Store) bool { return s.Host != "" }) {
		fmt.Fprintln(w, "NAME\tSLUG\tBACKEND\tPORT\tBROWSER\tID")
		for _, s := range stores {
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Slug, s.Backend, s.ProxyPort, s.Browser.Status, s.ID)
		}
		return w.Flush()
	}
	// In a cluster (SPEC §19) a store's browser runs on its host only: its state here says nothing of it.
	st, err := g.client().Status(g.ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "NAME\tSLUG\tHOST\tBACKEND\tPORT\tBROWSER\tID")
	for _, s := range stores {
		status, host := browserOn(st, s.ID, s.Browser.Status)
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.Name, s.Slug, orDash(host), s.Backend, s.ProxyPort, status, s.ID)
	}
	return w.Flush()
}

// StoreShowCmd shows one store.
type StoreShowCmd struct {
	Store string `arg:"" help:"Store name, slug or id."`
	JSON  bool   `help:"Print JSON: {id,name,slug,backend,proxy_port,cdp_http,cdp_ws,browser:{status,pid},checkpoint_at,snapshot_at}."`
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
	fmt.Fprintf(w, "name\t%s\nslug\t%s\nid\t%s\n", s.Name, s.Slug, s.ID)
	status := s.Browser.Status
	if s.Host != "" {
		st, err := g.client().Status(g.ctx)
		if err != nil {
			return err
		}
		storeHostLine(w, s, st.Host)
		status, _ = browserOn(st, s.ID, status)
	}
	fmt.Fprintf(w, "backend\t%s\nport\t%d\ncdp_http\t%s\ncdp_ws\t%s\nbrowser\t%s\n",
		s.Backend, s.ProxyPort, s.CDPHTTP, s.CDPWS, status)
	if s.Browser.PID > 0 {
		fmt.Fprintf(w, "pid\t%d\n", s.Browser.PID)
	}
	if s.Wrapper != "" {
		fmt.Fprintf(w, "wrapper\t%s\n", s.Wrapper)
	}
	if s.Backend == "chrome" {
		fmt.Fprintf(w, "proxy\t%s\ntimezone\t%s\nlang\t%s\n", orNone(s.Proxy, "none (the machine's own IP)"),
			orNone(s.Timezone, "the machine's"), orNone(s.Lang, "the machine's"))
	}
	fmt.Fprintf(w, "agent user\t%s\n", orNone(s.AgentUser, "none: agents run as the manager's user, a boundary by convention only"))
	if s.Backend == "chrome" {
		fmt.Fprintf(w, "browser user\t%s\n", orNone(s.BrowserUser, "the manager's"))
	}
	fmt.Fprintf(w, "timeline\t%s (from %s)\n", s.Timeline, s.TimelineFrom)
	loginLines(w, s)
	return w.Flush()
}

func orNone(v, none string) string {
	if v == "" {
		return none
	}
	return v
}

// StoreSetCmd changes a store's settings; what it does not name stays.
type StoreSetCmd struct {
	Store    string  `arg:"" help:"Store name, slug or id."`
	Proxy    *string `help:"The store's upstream proxy ([user:password@]host:port after http://, https://, socks5:// or socks5h://), - to read it from stdin (its password then in no process's arguments), or none." placeholder:"URL|none"`
	Timezone *string `help:"The browser's IANA time zone (Europe/Berlin), or none for the machine's." placeholder:"ZONE|none"`
	Lang     *string `help:"The browser's language, a BCP 47 tag (de-DE), or none for the machine's." placeholder:"TAG|none"`
	Headless bool    `help:"Run the browser headless." xor:"mode"`
	Headed   bool    `help:"Run the browser with a window." xor:"mode"`
	JSON     bool    `help:"Print the store as JSON."`

	AgentUser   *string `name:"agent-user" help:"The OS user the store's agents run as (SPEC §14), none for none, or \"\" for VIBE_AGENT_USER's. Needs a root manager." placeholder:"USER|none"`
	BrowserUser *string `name:"browser-user" help:"The OS user its browser runs as, so no two stores' browsers read each other's profiles; none for the manager's, \"\" for the one the manager makes for it (vibe-b-<slug>, when it has an agent user or a proxy). Needs a root manager." placeholder:"USER|none"`
	Timeline    *string `help:"What its tasks' timelines record from now on: full (code, output, screenshots), meta (the steps only), off, or \"\" for VIBE_TIMELINE's." placeholder:"full|meta|off"`
}

// Run applies the change and prints the store; a browser that runs keeps its settings until its next start.
func (c *StoreSetCmd) Run(g *globals) error {
	u := api.StoreUpdate{StoreChanges: api.StoreChanges{Proxy: c.Proxy, Timezone: c.Timezone, Lang: c.Lang,
		AgentUser: c.AgentUser, BrowserUser: c.BrowserUser, Timeline: c.Timeline}}
	if c.Proxy != nil {
		proxy, err := proxyArg(*c.Proxy)
		if err != nil {
			return err
		}
		u.Proxy = &proxy
	}
	if c.Headless || c.Headed {
		u.Headless = &c.Headless
	}
	if u == (api.StoreUpdate{}) {
		return &usageError{"store set needs a setting to change: --proxy URL|none, --timezone ZONE|none, --lang TAG|none, " +
			"--headless or --headed, --agent-user USER|none, --browser-user USER|none, --timeline full|meta|off"}
	}
	s, err := g.client().UpdateStore(g.ctx, c.Store, u)
	if err != nil {
		return err
	}
	if err := printStore(g, s, c.JSON); err != nil {
		return err
	}
	if s.Browser.Status == api.StatusRunning && !c.JSON {
		fmt.Fprintf(g.stderr, "vibe-browser: the browser runs with its old settings until its next start: "+
			"vibe-browser browser stop %s (the next call starts it again)\n", s.Slug)
	}
	return nil
}

// proxyArg is a --proxy value, read from stdin when it is "-".
func proxyArg(v string) (string, error) {
	if v != "-" {
		return v, nil
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", &usageError{"--proxy - reads the proxy URL from stdin, which gave none"}
	}
	return strings.TrimSpace(line), nil
}
