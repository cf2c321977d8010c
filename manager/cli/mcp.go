package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"vibebrowser/manager/api"
)

// McpCmd is `vibe-browser mcp`: an MCP browser server on a store's browser, as a task's client (SPEC §17).
type McpCmd struct {
	Run    McpRunCmd    `cmd:"" default:"withargs" help:"Run an MCP server (after --) on the store's browser: vibe-browser mcp --store STORE [--task ID] -- npx @playwright/mcp@latest."`
	Config McpConfigCmd `cmd:"" help:"Print the block an MCP client's config needs (.mcp.json) to run a server through vibe-browser mcp."`
}

// McpRunCmd runs the server as a child, its stdio the caller's, after ensure for the client.
type McpRunCmd struct {
	Store  string   `help:"Store name, slug or id." xor:"which" required:""`
	Web    bool     `help:"The store-less web browser." xor:"which" required:""`
	Task   string   `help:"The agent's task id (default: $VIBE_TASK_ID)." placeholder:"ID"`
	Worker string   `help:"A worker slot of the task: tabs of its own beside the task's (1 to VIBE_BROWSER_WORKER_SLOTS)." placeholder:"N"`
	Server []string `arg:"" optional:"" passthrough:"" help:"The MCP server's command line, after --."`
}

// mcpLeaseMin bounds how often a running server's lease is renewed.
const mcpLeaseMin = time.Second

// Run checks the command line, asks the manager for the client's browser, and runs the server with the
// client's mux URL in its endpoint flag until it exits; its status is the command's. Nothing but the server
// writes to stdout: it is the MCP client's channel.
func (c *McpRunCmd) Run(g *globals) error {
	argv := c.Server
	if len(argv) > 0 && argv[0] == "--" {
		argv = argv[1:]
	}
	cmd, err := planServer(argv)
	if err != nil {
		return err
	}
	task := c.Task
	if task == "" {
		task = os.Getenv("VIBE_TASK_ID")
	}
	if task != "" && !api.ValidTaskID(task) {
		return &usageError{fmt.Sprintf("task id %q is not a task id: want %s", task, api.TaskIDForm)}
	}
	if c.Worker != "" && task == "" {
		return &usageError{"--worker needs a task (--task or VIBE_TASK_ID): worker slots belong to a task; drop --worker"}
	}
	client, err := agentClient(g, task)
	if err != nil {
		return err
	}
	req, err := c.ensureRequest(g, client, task)
	if err != nil {
		return err
	}
	resp, err := client.EnsureSession(g.ctx, req)
	if err != nil {
		return fmt.Errorf("no browser for the MCP server: %w", err)
	}
	return runServer(g, cmd.with(resp.CDPWS), resp, func(ctx context.Context) error {
		_, err := client.EnsureSession(ctx, req)
		return err
	})
}

// agentClient is the manager client of an agent's call: the agents' socket with the task's token when
// VIBE_TASK_TOKEN is set (SPEC §14; vibe-browser agent sets it), else the owner's socket.
func agentClient(g *globals, task string) (*api.Client, error) {
	token := os.Getenv(api.TaskTokenEnv)
	switch {
	case token == "":
		return g.client(), nil
	case !api.ValidTaskToken(token):
		return nil, &usageError{api.TaskTokenEnv + " is not a task token (32 hex digits): use the one vibe-browser agent set, unchanged"}
	case task == "":
		return nil, &usageError{api.TaskTokenEnv + " is set without a task (--task or VIBE_TASK_ID): a task token is one task's"}
	}
	return &api.Client{Socket: api.AgentSocketPath(g.home), Token: token}, nil
}

// ensureRequest is the client's ensure call: the store (or web browser) with the worker rules of its
// wrapper's config (SPEC §3), as the shim would make it.
func (c *McpRunCmd) ensureRequest(g *globals, client *api.Client, task string) (api.EnsureRequest, error) {
	dir, base := api.WebKey, api.WebSlug
	req := api.EnsureRequest{Kind: api.KindWeb, TaskID: task, Via: api.ViaMCP}
	if !c.Web {
		id, slug, err := storeOfAgent(g, client, c.Store)
		if err != nil {
			return req, err
		}
		dir, base = slug, slug
		req.Kind, req.StoreID = api.KindStore, id
	}
	worker := 0
	if c.Worker != "" {
		cfg, err := api.LoadShimConfig(filepath.Join(g.home, "bin", dir, api.ShimConfigName))
		if err != nil {
			return req, fmt.Errorf("the worker slots are in the wrapper's config, which the manager writes: %w", err)
		}
		if worker, err = api.ParseWorker(c.Worker, cfg.WorkerSlots); err != nil {
			return req, &usageError{err.Error()}
		}
	}
	req.BUName, req.ClientID = api.SessionNames(base, task, worker, false)
	return req, nil
}

// storeOfAgent resolves a store for an agent's call: on the owner's socket by asking the manager; with a
// task token from the store's wrapper config (the agents' socket serves no store lookups), so by its slug.
func storeOfAgent(g *globals, client *api.Client, ref string) (id, slug string, err error) {
	if client.Token == "" {
		s, err := client.GetStore(g.ctx, ref)
		return s.ID, s.Slug, err
	}
	cfg, err := api.LoadShimConfig(filepath.Join(g.home, "bin", ref, api.ShimConfigName))
	if err != nil || cfg.Kind != api.ShimKindStore {
		return "", "", &usageError{fmt.Sprintf("with %s set, name the store by its slug (its wrapper folder "+
			"%s): %q names none", api.TaskTokenEnv, filepath.Join(g.home, "bin", "<slug>"), ref)}
	}
	return cfg.StoreID, cfg.Slug, nil
}

// runServer runs argv with the caller's stdio and environment plus the client's downloads folder (runChild),
// renewing the task's lease well within it while it runs.
func runServer(g *globals, argv []string, resp api.EnsureResponse, renew func(context.Context) error) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return &exitCodeError{code: exitNoServer(g, argv[0], err)}
	}
	child := exec.Command(path, argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, g.stdout, g.stderr
	child.Env = os.Environ()
	if resp.DownloadDir != "" {
		child.Env = append(child.Env, "VIBE_DOWNLOAD_DIR="+resp.DownloadDir)
	}
	return runChild(child, func(err error) error { return &exitCodeError{code: exitNoServer(g, argv[0], err)} },
		func(ctx context.Context) {
			if resp.LeaseS > 0 {
				renewLease(ctx, g, max(time.Duration(resp.LeaseS)*time.Second/4, mcpLeaseMin), renew)
			}
		})
}

// exitNoServer reports a server that cannot start and returns 127, a shell's code for a command not found.
func exitNoServer(g *globals, name string, err error) int {
	fmt.Fprintf(g.stderr, "vibe-browser mcp: cannot start the MCP server %s: %v\n", name, err)
	return 127
}

// renewLease calls renew every period until ctx ends; a failure is said on stderr and tried again next time.
func renewLease(ctx context.Context, g *globals, period time.Duration, renew func(context.Context) error) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			callCtx, cancel := context.WithTimeout(ctx, period)
			if err := renew(callCtx); err != nil && ctx.Err() == nil {
				fmt.Fprintf(g.stderr, "vibe-browser mcp: warning: the task's lease was not renewed: %s\n", oneLine(err))
			}
			cancel()
		}
	}
}
