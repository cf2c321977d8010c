//go:build integration

package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// The timeline, step 2 (issue 35): an MCP task's tool calls are call entries with shots after them; the
// steps a call made are its own, drawn inside its card; output sent to a file is kept, and a file cut
// short during the call is said to be.
func TestTimelineStepsAndMCPCalls(t *testing.T) {
	t.Parallel()
	m := startManager(t)
	web := site(t)
	store := m.addStore("Steps Shop")
	env := "--store " + store.Slug + " --task " + taskA
	dir := t.TempDir()

	// A call that opens two pages: both navigations are the call's. Its output goes to a file.
	out := filepath.Join(dir, "out.txt")
	m.mustAgent(env, "cd "+dir+" && browser-use <<'PY' > out.txt\nopen "+web.URL+"/first\nopen "+web.URL+"/second\neval document.title\nPY")
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), `"page second"`) {
		t.Fatalf("out.txt holds %q; want the call's output (the control: the agent got it)", b)
	}
	// A call whose output file is cut short while it runs.
	m.mustAgent(env, "cd "+dir+" && { browser-use <<'PY' > cut.txt & }\neval 'before the cut'\nsleep 2s\neval 'after the cut'\nPY\n"+
		"until [ -s cut.txt ]; do sleep 0.05; done; : > cut.txt; wait")

	// An MCP task on the same store: its tool calls.
	pw := m.mcp(true, "--store", store.Slug, "--task", taskB, "--", mcpServerBin(t, "playwright-mcp"))
	pw.tool("browser_navigate", map[string]any{"url": web.URL + "/mcp-page"})
	pw.tool("browser_tabs", map[string]any{"action": "list"})

	var calls []api.Entry
	var tl api.Timeline
	testkit.WaitFor(t, 15*time.Second, "task A's two calls and their steps", func() bool {
		tl = m.timeline(taskA)
		calls = calls[:0]
		for _, e := range tl.Entries {
			if e.Call != nil {
				calls = append(calls, e)
			}
		}
		return len(calls) == 2
	})
	first, second := calls[0], calls[1]
	var inFirst []string // the pages it went to, once each (a navigation's title comes in a second entry)
	for _, e := range tl.Entries {
		if e.Nav != nil && e.InCall == first.Seq && !slices.Contains(inFirst, e.Nav.URL) {
			inFirst = append(inFirst, e.Nav.URL)
		}
	}
	if len(inFirst) != 2 || !strings.HasSuffix(inFirst[0], "/first") || !strings.HasSuffix(inFirst[1], "/second") {
		t.Errorf("the first call's navigations = %q; want /first and /second, linked to call %d", inFirst, first.Seq)
	}
	if !strings.Contains(first.Call.Stdout, `"page second"`) || len(first.Call.Untold) != 0 {
		t.Errorf("the call with > out.txt: stdout %q, untold %q; want its output read back from the file", first.Call.Stdout, first.Call.Untold)
	}
	if second.Call.Stdout != "" || len(second.Call.Untold) != 1 || !strings.Contains(second.Call.Untold[0], "stdout (the file was truncated during the call)") {
		t.Errorf("the call whose file was cut: stdout %q, untold %q; want stdout untold, saying it was truncated", second.Call.Stdout, second.Call.Untold)
	}

	var mcpCalls []api.Entry
	testkit.WaitFor(t, 15*time.Second, "task B's MCP calls and the shot after its navigation", func() bool {
		mcpCalls = mcpCalls[:0]
		shot := false
		for _, e := range m.timeline(taskB).Entries {
			if e.Call != nil {
				mcpCalls = append(mcpCalls, e)
			}
			if e.Shot != nil && strings.HasSuffix(e.Shot.URL, "/mcp-page") {
				shot = true
			}
		}
		return len(mcpCalls) == 2 && shot
	})
	nav, tabs := mcpCalls[0].Call, mcpCalls[1].Call
	if nav.Tool != "browser_navigate" || !strings.Contains(nav.Code, "/mcp-page") || nav.Outcome != api.CallOK ||
		tabs.Tool != "browser_tabs" || !strings.Contains(tabs.Stdout, "/mcp-page") || tabs.End.Before(tabs.Start) {
		t.Errorf("the MCP calls = %+v and %+v; want browser_navigate with its URL, browser_tabs listing the page", nav, tabs)
	}
	if code := pw.end(30 * time.Second); code != 0 {
		t.Errorf("vibe-browser mcp exited %d; want 0", code)
	}

	// Both task pages, as a person sees them.
	login := uiLogin(t, m)
	view := startNodeScript(t, "ui_bidi.js", login.URL)
	view.expect("ready")
	for _, p := range []struct{ task, needle, shot string }{
		{taskA, "/second", "steps-in-call.png"},
		{taskB, "browser_navigate", "mcp-calls.png"},
	} {
		shot := filepath.Join(t.TempDir(), p.shot)
		view.send("page /task/" + p.task + " " + p.needle + " " + shot)
		got := view.expect("page")
		wantReadable(t, got, 1280)
		keepScreenshot(t, shot, p.shot)
	}
	exported := filepath.Join(t.TempDir(), "steps.html")
	m.cli("task", "export", taskA, "-o", exported)
	shot := filepath.Join(t.TempDir(), "steps-export.png")
	view.send("file " + exported + " /second " + shot)
	got := view.expect("file")
	keepScreenshot(t, shot, "steps-export.png")
	if p := got["problems"].([]any); len(p) > 0 {
		t.Errorf("the export logged errors: %q", p)
	}
	view.send("card /task/" + taskA)
	card := view.expect("card")
	if n, _ := card["inner"].(float64); n < 2 {
		t.Errorf("the first call's card holds %v steps; want its two navigations inside it", card["inner"])
	}
	view.send("close")
	view.wait()
}
