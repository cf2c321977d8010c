//go:build integration

package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// mcpClient is a real MCP exchange over stdio (newline-ended JSON-RPC, the stdio transport) with a server run
// through `vibe-browser mcp`.
type mcpClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	lines  chan string // what the server wrote to stdout, line by line; closed at its end
	stderr *syncBuffer
	id     int
	exited chan struct{}
}

// mcpServerBin is an MCP server installed from integration/'s lockfile.
func mcpServerBin(t *testing.T, name string) string {
	t.Helper()
	path, err := filepath.Abs(filepath.Join("node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// mcp starts `vibe-browser --home H mcp args…` and, unless handshake is false, runs MCP's initialize.
func (m *managed) mcp(handshake bool, args ...string) *mcpClient {
	m.t.Helper()
	c := &mcpClient{t: m.t, lines: make(chan string, 64), stderr: &syncBuffer{}, exited: make(chan struct{})}
	c.cmd = exec.Command(m.bins.vibe, append([]string{"--home", m.home, "mcp"}, args...)...)
	c.cmd.Env = append(append([]string{}, m.env...), "CHROME_DEVTOOLS_MCP_NO_USAGE_STATISTICS=1")
	c.cmd.Dir = m.t.TempDir() // @playwright/mcp keeps its output (.playwright-mcp/) in its working directory
	c.cmd.Stderr = c.stderr
	var err error
	if c.in, err = c.cmd.StdinPipe(); err != nil {
		m.t.Fatal(err)
	}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		m.t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		m.t.Fatal(err)
	}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	go func() { c.cmd.Wait(); close(c.exited) }()
	m.t.Cleanup(func() {
		c.in.Close()
		select {
		case <-c.exited:
		case <-time.After(20 * time.Second):
			c.cmd.Process.Kill()
			<-c.exited
		}
		if m.t.Failed() {
			m.t.Logf("vibe-browser mcp %s stderr:\n%s", strings.Join(args, " "), lastLines(c.stderr.String(), 40))
		}
	})
	if handshake {
		c.request("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "vibe-integration", "version": "1"}})
		c.send(map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	}
	return c
}

func (c *mcpClient) send(msg map[string]any) {
	c.t.Helper()
	b, err := json.Marshal(msg)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("write to the MCP server: %v\nstderr:\n%s", err, c.stderr.String())
	}
}

// request sends one JSON-RPC request and returns its result, skipping the server's notifications.
func (c *mcpClient) request(method string, params any) json.RawMessage {
	c.t.Helper()
	c.id++
	c.send(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	timeout := time.After(90 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("the MCP server ended before answering %s\nstderr:\n%s", method, lastLines(c.stderr.String(), 40))
			}
			var msg struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &msg); err != nil {
				c.t.Fatalf("the MCP server wrote %q on stdout, which is not JSON-RPC: %v", line, err)
			}
			if msg.ID == nil || *msg.ID != c.id {
				continue
			}
			if msg.Error != nil {
				c.t.Fatalf("%s: %s", method, msg.Error.Message)
			}
			return msg.Result
		case <-timeout:
			c.t.Fatalf("no answer to %s in 90s\nstderr:\n%s", method, lastLines(c.stderr.String(), 40))
		}
	}
}

// tool calls an MCP tool and returns its text content, failing on a tool error.
func (c *mcpClient) tool(name string, args map[string]any) string {
	c.t.Helper()
	var res struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(c.request("tools/call", map[string]any{"name": name, "arguments": args}), &res); err != nil {
		c.t.Fatal(err)
	}
	var text []string
	for _, part := range res.Content {
		text = append(text, part.Text)
	}
	if res.IsError {
		c.t.Fatalf("tool %s failed: %s", name, strings.Join(text, "\n"))
	}
	return strings.Join(text, "\n")
}

// end closes the server's stdin, as an MCP client does when it is done, and returns the wrapper's exit code.
func (c *mcpClient) end(within time.Duration) int {
	c.t.Helper()
	c.in.Close()
	select {
	case <-c.exited:
	case <-time.After(within):
		c.t.Fatalf("vibe-browser mcp still runs %v after its stdin closed\nstderr:\n%s", within, c.stderr.String())
	}
	var exit *exec.ExitError
	if err := c.cmd.Wait(); errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return c.cmd.ProcessState.ExitCode()
}

// TestMCPServersShareAStoreIsolated: @playwright/mcp and chrome-devtools-mcp, each through `vibe-browser mcp`
// for a task of its own on one store, see only their own tabs, while a browser-use call of a third task on
// the same store is unaffected; the refusals and the exit status pass as SPEC §17 says.
func TestMCPServersShareAStoreIsolated(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	t.Cleanup(func() { wantNoRefusals(t, m.log.String()) })
	web := site(t)
	acme := m.addStore("Acme")
	const taskC = "c3c3c3c3-0000-4000-8000-00000000000c"

	pw := m.mcp(true, "--store", acme.Slug, "--task", taskA, "--", mcpServerBin(t, "playwright-mcp"))
	cd := m.mcp(true, "--store", acme.Slug, "--task", taskB, "--", mcpServerBin(t, "chrome-devtools-mcp"))
	pw.tool("browser_navigate", map[string]any{"url": web.URL + "/alpha-mcp"})
	cd.tool("new_page", map[string]any{"url": web.URL + "/beta-mcp"})

	out := m.mustAgent("--store "+acme.Slug+" --task "+taskC, "browser-use <<'PY'\nopen "+web.URL+"/gamma-bu\ntargets\nPY")
	if !strings.Contains(out, "/gamma-bu") || strings.Contains(out, "-mcp") {
		t.Errorf("the browser-use task beside the MCP servers sees %q; want its own /gamma-bu only", out)
	}
	for _, tc := range []struct {
		c          *mcpClient
		tool, mine string
	}{{pw, "browser_tabs", "/alpha-mcp"}, {cd, "list_pages", "/beta-mcp"}} {
		args := map[string]any{}
		if tc.tool == "browser_tabs" {
			args["action"] = "list"
		}
		tabs := tc.c.tool(tc.tool, args)
		others := slices.DeleteFunc([]string{"/alpha-mcp", "/beta-mcp", "/gamma-bu"}, func(s string) bool { return s == tc.mine })
		if !strings.Contains(tabs, tc.mine) || strings.Contains(tabs, others[0]) || strings.Contains(tabs, others[1]) {
			t.Errorf("%s lists %q; want its own %s and no other task's tab", tc.tool, tabs, tc.mine)
		}
	}
	task, err := m.client.GetTask(t.Context(), taskA)
	if err != nil || task.Store != acme.ID || !task.LeaseUntil.After(time.Now()) {
		t.Errorf("task A through mcp = %+v, %v; want it leased on the store", task, err)
	}

	if code := pw.end(30 * time.Second); code != 0 {
		t.Errorf("@playwright/mcp through vibe-browser mcp exited %d at the end of its stdin; want 0", code)
	}
	if code := cd.end(30 * time.Second); code != 0 {
		t.Errorf("chrome-devtools-mcp through vibe-browser mcp exited %d at the end of its stdin; want 0", code)
	}

	// Any server, through {cdp_ws}: the status is the server's, and the URL is the task's own client.
	gen := m.mcp(false, "--store", acme.Slug, "--task", taskA, "--worker", "2", "--",
		"bash", "-c", `echo "endpoint $0" >&2; read -r line; exit 7`, "{cdp_ws}")
	if code := gen.end(20 * time.Second); code != 7 {
		t.Errorf("a server exiting 7 through vibe-browser mcp made it exit %d; want 7", code)
	}
	if got := gen.stderr.String(); !strings.Contains(got, "endpoint ws://") || !strings.Contains(got, "/client-"+taskA+"-w2") {
		t.Errorf("the generic server got %q; want the mux URL of task A's worker 2", got)
	}

	for _, refused := range [][]string{
		{"--store", acme.Slug, "--", mcpServerBin(t, "playwright-mcp"), "--isolated"},
		{"--store", acme.Slug, "--", mcpServerBin(t, "chrome-devtools-mcp"), "--browserUrl", "http://127.0.0.1:9222"},
		{"--store", acme.Slug, "--", "my-own-mcp-server"},
		{"--store", acme.Slug, "--worker", "2", "--", mcpServerBin(t, "playwright-mcp")},
	} {
		out, err := m.cliErr(append([]string{"mcp"}, refused...)...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(out, "vibe-browser: ") {
			t.Errorf("mcp %q = %v: %s; want exit 2 with the rule", refused, err, out)
		}
	}

	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	raw := m.cli("mcp", "config", "--store", acme.Slug, "--server", "playwright", "--json")
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		t.Fatalf("mcp config --json printed %q: %v", raw, err)
	}
	entry, ok := cfg.MCPServers["browser-"+acme.Slug]
	want := []string{"--home", m.home, "mcp", "--store", acme.Slug, "--", "npx", "-y", "@playwright/mcp@latest"}
	if !ok || !filepath.IsAbs(entry.Command) || !slices.Equal(entry.Args, want) {
		t.Errorf("mcp config = %s; want browser-%s running %s with %q", raw, acme.Slug, m.bins.vibe, want)
	}
}
