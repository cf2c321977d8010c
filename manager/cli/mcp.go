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
	if at.task == "" {
		at.task = os.Getenv("VIBE_TASK_ID")
	}
	e, err := at.ensure(g)
	if err != nil {
		return fmt.Errorf("no browser for the MCP server: %w", err)
	}
	return runServer(g, cmd.with(e.resp.CDPWS), e, at.task)
}

// mcpOutputDelay bounds how long the wrapper waits, after the server exited, for the end of its stdout (a
// process it left behind may hold it open).
const mcpOutputDelay = 5 * time.Second

// runServer runs argv with the caller's stdio and environment plus the client's downloads folder (runChild),
// renewing the task's lease well within it while it runs. With a task whose store keeps a timeline, its
// stdin and stdout pass through the wrapper, which records each tools/call (mcpcalls.go).
func runServer(g *globals, argv []string, e ensured, task string) error {
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return &exitCodeError{code: exitNoServer(g, argv[0], err)}
	}
	child := exec.Command(path, argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, g.stdout, g.stderr
	child.Env = os.Environ()
	if e.resp.DownloadDir != "" {
		child.Env = append(child.Env, "VIBE_DOWNLOAD_DIR="+e.resp.DownloadDir)
	}
	var calls *mcpCalls
	if task != "" && (e.resp.Timeline == api.TimelineFull || e.resp.Timeline == api.TimelineMeta) {
		calls = newMCPCalls(api.CallReport{Client: e.req.ClientID, Session: e.req.BUName,
			Slot: api.ClientSlot(task, e.req.ClientID)}, e.resp.Timeline == api.TimelineFull)
		// stdin through a pipe of the wrapper's (the server sees its end when the client's stdin ends), stdout
		// through a writer exec copies into until the server's end, bounded by mcpOutputDelay.
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		defer r.Close()
		go func() {
			relayLines(os.Stdin, w, calls.fromClient)
			w.Close()
		}()
		child.Stdin = r
		child.Stdout = &tapWriter{dst: g.stdout, lines: lines{onLine: calls.fromServer}}
		child.WaitDelay = mcpOutputDelay
		reported := make(chan struct{})
		go func() {
			defer close(reported)
			calls.report(func(rep api.CallReport) error {
				ctx, cancel := context.WithTimeout(context.Background(), mcpReportTimeout)
				defer cancel()
				return e.client.ReportCall(ctx, task, rep)
			})
		}()
		defer func() {
			child.Stdout.(*tapWriter).lines.end()
			calls.closeAll()
			select {
			case <-reported:
			case <-time.After(mcpReportTimeout):
			}
		}()
	}
	return runChild(child, func(err error) error { return &exitCodeError{code: exitNoServer(g, argv[0], err)} },
		func(ctx context.Context) {
			if e.resp.LeaseS > 0 {
				renewLease(ctx, g, max(time.Duration(e.resp.LeaseS)*time.Second/4, mcpLeaseMin), e.renew)
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
