// Package cli is the vibe-browser command line: `serve` runs the manager daemon, every other command is a
// client of it over its unix socket.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/config"
	"vibebrowser/manager/untrusted"
)

// Version is the build's version, set by the linker (-X vibebrowser/manager/cli.Version=...).
var Version = "dev"

// Exit codes of the CLI.
const (
	exitError = 1 // the command failed; the message says why
	exitUsage = 2 // the command line is wrong
)

// CLI is the whole command tree.
type CLI struct {
	Home string `help:"Home directory (state, sockets, wrappers, profiles)." env:"VIBE_HOME" placeholder:"DIR"`

	Serve    ServeCmd    `cmd:"" help:"Run the manager daemon (what systemd or launchd runs)."`
	Status   StatusCmd   `cmd:"" help:"Show stores, browsers, mux clients and tasks."`
	Store    StoreCmd    `cmd:"" help:"Add, list, show and remove stores."`
	Browser  BrowserCmd  `cmd:"" help:"Start or stop a store's browser."`
	Web      WebCmd      `cmd:"" help:"Start or stop the store-less web browser."`
	Task     TaskCmd     `cmd:"" help:"Report a task's status to the manager; print or export what it did."`
	Agent    AgentCmd    `cmd:"" help:"Run an agent for a task: its token minted, its environment built, as its store's agent user."`
	Endpoint EndpointCmd `cmd:"" help:"Print the task's own CDP endpoint, for puppeteer or playwright (its client's capability URL)."`
	Env      EnvCmd      `cmd:"" help:"Print the shell lines that put a store's browser-use wrapper on an agent's PATH."`
	Reap     ReapCmd     `cmd:"" help:"Run one daemon-reaper pass now (stops browser-use daemons of ended tasks)."`
	UI       UICmd       `cmd:"" name:"ui" help:"Print a one-time login link to the web UI (--open opens it)."`
	Handoff  HandoffCmd  `cmd:"" help:"List and answer agents' requests for a person's help (browser-use --ask-human)."`
	Service  ServiceCmd  `cmd:"" help:"Install or remove the systemd unit / launchd plist that runs the manager."`
	Doctor   DoctorCmd   `cmd:"" help:"Check Chromium, browser-use, the home, the manager, the ports, the display and the service; exit 1 on a problem."`
	Version  VersionCmd  `cmd:"" help:"Print the version."`

	Downloads DownloadsCmd `cmd:"" help:"List finished downloads, per task and store (where each file is, its size and sha256)."`
	Mcp       McpCmd       `cmd:"" name:"mcp" help:"Run an MCP browser server (@playwright/mcp, chrome-devtools-mcp) on a store's browser, as a task's client."`
	Cluster   ClusterCmd   `cmd:"" help:"Make a cluster of hosts (no manager needed): its CA and secret (init), each host's certificate (join)."`

	Keep KeepCmd `cmd:"" hidden:"" passthrough:"" help:"Hold a launched Chromium's DevTools pipe (the manager runs it)."`
}

// globals is what every command's Run receives.
type globals struct {
	ctx    context.Context
	home   string
	stdout io.Writer
	stderr io.Writer
	daemon Daemon
}

// Daemon runs the manager daemon until ctx ends (manager.Run): `vibe-browser serve` calls it. The command's
// main passes it in, so that the CLI imports the daemon's configuration and never the daemon.
type Daemon func(ctx context.Context, cfg *config.Config, log zerolog.Logger, version string) error

func (g *globals) client() *api.Client {
	return api.NewClient(api.SocketPath(g.home))
}

// printJSON writes v indented, for --json output.
func (g *globals) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = g.stdout.Write(append(untrusted.JSON(b), '\n'))
	return err
}

// printJSONLine prints v as one line of JSON (a stream of them is JSON Lines).
func (g *globals) printJSONLine(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = g.stdout.Write(append(untrusted.JSON(b), '\n'))
	return err
}

// Run parses args and runs the command, returning the process exit code. Errors are printed once, as one
// line on stderr.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, daemon Daemon) int {
	var cli CLI
	parser, err := kong.New(&cli,
		kong.Name("vibe-browser"),
		kong.Description("Safe, shared, long-lived logged-in browsers for AI agents."),
		kong.Writers(stdout, stderr),
		kong.UsageOnError(),
		kong.Exit(func(int) {}),
	)
	if err != nil {
		fmt.Fprintf(stderr, "vibe-browser: %v\n", err)
		return exitError
	}
	kctx, err := parser.Parse(args)
	if containsHelp(args) {
		return 0 // kong printed the help
	}
	if err != nil {
		var parseErr *kong.ParseError
		if errors.As(err, &parseErr) {
			fmt.Fprintf(stderr, "vibe-browser: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "vibe-browser: %v\n", err)
		return exitError
	}
	home := cli.Home
	if home == "" {
		home = api.DefaultHome()
	}
	if abs, err := filepath.Abs(home); err == nil {
		home = abs
	}
	g := &globals{ctx: ctx, home: home, stdout: stdout, stderr: stderr, daemon: daemon}
	if err := kctx.Run(g); err != nil {
		var code *exitCodeError
		if errors.As(err, &code) {
			return code.code // the command printed what it had to say
		}
		var usage *usageError
		if errors.As(err, &usage) {
			fmt.Fprintf(stderr, "vibe-browser: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(stderr, "vibe-browser: %s\n", oneLine(err))
		return exitError
	}
	return 0
}

// containsHelp reports a help flag on the command line; after a "--" the arguments are another program's
// (keep's Chromium command line), not the CLI's.
func containsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--help" || a == "-h" {
			return true
		}
	}
	return false
}

// usageError is a command line that parsed but makes no sense (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// exitCodeError is a command's own exit code, passed on as it is (the keeper's is its Chromium's status).
type exitCodeError struct{ code int }

func (e *exitCodeError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// oneLine renders err as one line: the manager's message when it answered, the error otherwise.
func oneLine(err error) string {
	var apiErr *api.Error
	msg := err.Error()
	if errors.As(err, &apiErr) {
		msg = apiErr.Message
	}
	return untrusted.Terminal(strings.Join(strings.Fields(msg), " ")) // a refusal may quote what an agent sent
}
