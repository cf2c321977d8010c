package mux

// refusal is one entry of the table of methods the mux will not forward because they would hurt every
// tenant of the shared browser (or break the isolation the mux exists for).
type refusal struct {
	reason string
	// when, if set, limits the refusal to some calls; it runs under mu with the decoded params.
	when func(m *Mux, c *conn, p *cmdParams) bool
}

// refusals is the one table of refused methods; each entry says why. A refused call gets a CDP error and
// nothing reaches the browser.
var refusals = map[string]refusal{
	"Browser.crash":           {reason: "it crashes the browser every client shares"},
	"Browser.crashGpuProcess": {reason: "it crashes the GPU process of the browser every client shares"},
	"Target.disposeBrowserContext": {
		reason: "only a browser context this client created may be disposed (the default one holds every tenant's tabs and the logged-in profile)",
		when: func(m *Mux, c *conn, p *cmdParams) bool {
			return p.BrowserContextID == "" || !c.cl.contexts[p.BrowserContextID]
		},
	},
	"Target.attachToBrowserTarget":  {reason: "a browser session would bypass the per-client isolation of Target.* and Browser.*"},
	"Target.exposeDevToolsProtocol": {reason: "it hands page script unfiltered, browser-wide CDP"},
	"Target.setRemoteLocations":     {reason: "it changes browser-wide discovery for every client"},
	"Target.sendMessageToTarget":    {reason: "non-flattened sessions are not multiplexed; attach with flatten:true"},
	"Target.attachToTarget": {
		reason: "non-flattened sessions are not multiplexed; attach with flatten:true",
		when:   func(m *Mux, c *conn, p *cmdParams) bool { return p.Flatten == nil || !*p.Flatten },
	},
}
