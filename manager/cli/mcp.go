package cli

import (
	"context"
	"fmt"
	"os"
	"os/exec"
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
	at := agentTarget{store: c.Store, web: c.Web, task: c.Task, worker: c.Worker, via: api.ViaMCP}
	resp, renew, err := at.ensure(g)
	if err != nil {
		return fmt.Errorf("no browser for the MCP server: %w", err)
	}
	return runServer(g, cmd.with(resp.CDPWS), resp, renew)
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
