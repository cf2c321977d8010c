package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"vibebrowser/manager/api"
)

// McpConfigCmd prints what an MCP client's config needs to run a server through `vibe-browser mcp`.
type McpConfigCmd struct {
	Store  string `help:"Store name, slug or id." xor:"which" required:""`
	Web    bool   `help:"The store-less web browser." xor:"which" required:""`
	Task   string `help:"Bake this task id in (default: none, so the agent's VIBE_TASK_ID is used when the server starts)." placeholder:"ID"`
	Server string `help:"The MCP server: playwright (@playwright/mcp) or chrome-devtools (chrome-devtools-mcp)." enum:"playwright,chrome-devtools" required:""`
	JSON   bool   `help:"Print only the JSON (.mcp.json's shape)."`
}

// mcpConfigFile is the .mcp.json shape: one server, by name.
type mcpConfigFile struct {
	MCPServers map[string]mcpConfigServer `json:"mcpServers"`
}

type mcpConfigServer struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
}

// Run prints the block: this executable, the mcp command for the store (and task), and the server run with
// npx, its latest release as its own README installs it.
func (c *McpConfigCmd) Run(g *globals) error {
	if c.Task != "" && !api.ValidTaskID(c.Task) {
		return &usageError{fmt.Sprintf("--task %q is not a task id: want %s", c.Task, api.TaskIDForm)}
	}
	name, which := "browser-web", []string{"--web"}
	if !c.Web {
		s, err := g.client().GetStore(g.ctx, c.Store)
		if err != nil {
			return err
		}
		name, which = "browser-"+s.Slug, []string{"--store", s.Slug}
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot locate the vibe-browser executable: %w", err)
	}
	if resolved, err := filepath.EvalSymlinks(exe); err == nil {
		exe = resolved
	}
	var args []string
	if g.home != api.BuiltinHome() { // the MCP client's environment may have no VIBE_HOME
		args = append(args, "--home", g.home)
	}
	args = append(append(args, "mcp"), which...)
	if c.Task != "" {
		args = append(args, "--task", c.Task)
	}
	var server mcpServer
	for _, s := range mcpServers {
		if s.name == c.Server {
			server = s
		}
	}
	args = append(args, "--", "npx", "-y", server.npx)
	block := mcpConfigFile{MCPServers: map[string]mcpConfigServer{name: {Command: exe, Args: args}}}
	if c.JSON {
		return g.printJSON(block)
	}
	data, err := json.MarshalIndent(block, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "Add this to your MCP client's config (.mcp.json in the project for Claude Code, "+
		"~/.cursor/mcp.json for Cursor):\n\n%s\n\nOr, for Claude Code: claude mcp add %s -- %s\n\n", data, name,
		shellJoin(append([]string{exe}, args...)))
	if c.Task == "" {
		fmt.Fprintln(g.stdout, "No task is baked in: the server runs as the task in the agent's VIBE_TASK_ID "+
			"(set by vibe-browser env), or as the manual client without one.")
	}
	return nil
}

// shellJoin quotes each word for a POSIX shell where it needs it.
func shellJoin(words []string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = w
		if w == "" || strings.ContainsFunc(w, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./@=:", r))
		}) {
			out[i] = shellQuote(w)
		}
	}
	return strings.Join(out, " ")
}
