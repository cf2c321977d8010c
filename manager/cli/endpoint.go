package cli

import (
	"fmt"
	"strings"

	"vibebrowser/manager/api"
)

// EndpointCmd prints a task's own CDP endpoint, for an agent that drives its browser with its own CDP
// client (puppeteer, playwright): the capability URL of its client, which opens no other client's pages.
type EndpointCmd struct {
	Store  string `help:"Store name, slug or id (with VIBE_TASK_TOKEN set: its slug)." xor:"which" required:""`
	Web    bool   `help:"The store-less web browser." xor:"which" required:""`
	Task   string `help:"The agent's task id (default: $VIBE_TASK_ID)." placeholder:"ID"`
	Worker string `help:"A worker slot of the task: tabs of its own beside the task's (1 to VIBE_BROWSER_WORKER_SLOTS)." placeholder:"N"`
	HTTP   bool   `name:"http" help:"Print the http:// form (playwright's connectOverCDP) instead of ws:// (puppeteer's browserWSEndpoint)."`
}

// Run starts the browser if it sleeps, renews the task's lease, and prints the URL.
func (c *EndpointCmd) Run(g *globals) error {
	at := agentTarget{store: c.Store, web: c.Web, task: c.Task, worker: c.Worker, via: api.ViaCDP}
	e, err := at.ensure(g)
	if err != nil {
		return err
	}
	url := e.resp.CDPWS
	if c.HTTP {
		url = "http" + strings.TrimPrefix(url, "ws")
	}
	fmt.Fprintln(g.stdout, url)
	return nil
}
