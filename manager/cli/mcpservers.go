package cli

import (
	"fmt"
	"path/filepath"
	"strings"
)

// cdpWSPlaceholder in an MCP server's arguments is replaced by the client's mux URL, for a server that
// vibe-browser mcp does not know by name.
const cdpWSPlaceholder = "{cdp_ws}"

// mcpServer is an MCP browser server known by name: how its command line is recognised, the flag of its own
// that takes a CDP WebSocket URL, and what `mcp config` runs for it.
type mcpServer struct {
	name     string   // --server of `mcp config`
	commands []string // npm package and executable names that start it
	endpoint string   // its flag for the browser's WebSocket URL
	npx      string   // the npm package `mcp config` runs with npx
}

var mcpServers = []mcpServer{
	{name: "playwright", commands: []string{"@playwright/mcp", "playwright-mcp", "mcp-server-playwright"},
		endpoint: "--cdp-endpoint", npx: "@playwright/mcp@latest"},
	{name: "chrome-devtools", commands: []string{"chrome-devtools-mcp"},
		endpoint: "--wsEndpoint", npx: "chrome-devtools-mcp@latest"},
}

// mcpRefusal is a flag that would take an MCP server off the store's browser, with the rule it breaks.
// server scopes a short alias to the server that defines it ("" for every server); endpoint marks a flag
// that takes a browser's address, allowed only with the placeholder as its value.
type mcpRefusal struct {
	flag     string
	server   string
	endpoint bool
	rule     string
}

const (
	ruleOtherBrowser = "it would connect the server to another browser; vibe-browser mcp connects it to the store's browser itself"
	ruleOwnBrowser   = "it would make the server launch a browser of its own, with no login and around the task's isolation"
	ruleProfile      = "it would point the server at another profile; the store's login lives in its browser's own profile"
	ruleConfigFile   = "a config file can point the server at another browser; give its options as flags"
	ruleStdio        = "it would serve MCP over HTTP; vibe-browser mcp passes stdio through, so the server must speak stdio"
)

// mcpRefused is the one table of refused server flags (SPEC §17), @playwright/mcp's and chrome-devtools-mcp's
// spellings side by side.
var mcpRefused = []mcpRefusal{
	{flag: "--cdp-endpoint", endpoint: true, rule: ruleOtherBrowser},
	{flag: "--endpoint", endpoint: true, rule: ruleOtherBrowser},
	{flag: "--extension", rule: ruleOtherBrowser},
	{flag: "--browserUrl", endpoint: true, rule: ruleOtherBrowser},
	{flag: "--browser-url", endpoint: true, rule: ruleOtherBrowser},
	{flag: "-u", server: "chrome-devtools", endpoint: true, rule: ruleOtherBrowser},
	{flag: "--wsEndpoint", endpoint: true, rule: ruleOtherBrowser},
	{flag: "--ws-endpoint", endpoint: true, rule: ruleOtherBrowser},
	{flag: "-w", server: "chrome-devtools", endpoint: true, rule: ruleOtherBrowser},
	{flag: "--autoConnect", rule: ruleOtherBrowser},
	{flag: "--auto-connect", rule: ruleOtherBrowser},
	{flag: "--executable-path", rule: ruleOwnBrowser},
	{flag: "--executablePath", rule: ruleOwnBrowser},
	{flag: "-e", server: "chrome-devtools", rule: ruleOwnBrowser},
	{flag: "--browser", rule: ruleOwnBrowser},
	{flag: "--channel", rule: ruleOwnBrowser},
	{flag: "--user-data-dir", rule: ruleProfile},
	{flag: "--userDataDir", rule: ruleProfile},
	{flag: "--isolated", rule: ruleProfile},
	{flag: "--storage-state", rule: ruleProfile},
	{flag: "--profile-dir-name", rule: ruleProfile},
	{flag: "--config", rule: ruleConfigFile},
	{flag: "--port", rule: ruleStdio},
	{flag: "--host", rule: ruleStdio},
}

// serverCommand is an MCP server's command line made ready to run against a client's endpoint.
type serverCommand struct {
	argv   []string // the command line, cdpWSPlaceholder where the endpoint goes
	server string   // the known server's name, "" for one reached through the placeholder
}

// planServer checks an MCP server's command line and marks where the endpoint goes: the placeholder where the
// arguments have it, else the known server's own flag, appended. A refused flag, or an unknown server with
// no placeholder, is a usageError naming the rule.
func planServer(argv []string) (serverCommand, error) {
	if len(argv) == 0 {
		return serverCommand{}, &usageError{"no MCP server to run: give its command after --, as in " +
			"vibe-browser mcp --store STORE -- npx @playwright/mcp@latest"}
	}
	known := recogniseServer(argv)
	placeholder := false
	for i, arg := range argv[1:] {
		placeholder = placeholder || strings.Contains(arg, cdpWSPlaceholder)
		name, value, hasValue := strings.Cut(arg, "=")
		for _, r := range mcpRefused {
			if name != r.flag || r.server != "" && r.server != known.name {
				continue
			}
			if !hasValue && i+2 < len(argv) {
				value = argv[i+2]
			}
			if r.endpoint && value == cdpWSPlaceholder {
				continue // the client's own endpoint, where this server takes it
			}
			return serverCommand{}, &usageError{fmt.Sprintf("the MCP server flag %s is refused: %s; drop it", r.flag, r.rule)}
		}
	}
	cmd := serverCommand{argv: append([]string{}, argv...), server: known.name}
	switch {
	case placeholder:
	case known.name != "":
		cmd.argv = append(cmd.argv, known.endpoint, cdpWSPlaceholder)
	default:
		return serverCommand{}, &usageError{fmt.Sprintf("mcp does not know the MCP server %q, so it cannot "+
			"tell where the browser's endpoint goes: put %s in its arguments where it takes a CDP WebSocket URL "+
			"(it is replaced by the task's own), or run @playwright/mcp or chrome-devtools-mcp", argv[0], cdpWSPlaceholder)}
	}
	return cmd, nil
}

// with returns the command line with the client's endpoint in place of the placeholder.
func (c serverCommand) with(endpoint string) []string {
	out := make([]string, len(c.argv))
	for i, a := range c.argv {
		out[i] = strings.ReplaceAll(a, cdpWSPlaceholder, endpoint)
	}
	return out
}

// recogniseServer finds a known server in a command line: a word naming its package or executable (npx's
// `@playwright/mcp@latest`, an installed `playwright-mcp`, a path into `…/chrome-devtools-mcp/…`).
func recogniseServer(argv []string) mcpServer {
	for _, word := range argv {
		if strings.HasPrefix(word, "-") {
			continue
		}
		for _, s := range mcpServers {
			for _, c := range s.commands {
				if namesCommand(word, c) {
					return s
				}
			}
		}
	}
	return mcpServer{}
}

// namesCommand reports whether word starts the package or executable c: c itself, with an @version, as a
// path's last element, or as a directory of a path into its package.
func namesCommand(word, c string) bool {
	bare := word
	if i := strings.LastIndex(word, "@"); i > 0 {
		bare = word[:i]
	}
	return bare == c || filepath.Base(word) == c || strings.Contains(word, "/"+c+"/") || strings.HasPrefix(word, c+"/")
}
