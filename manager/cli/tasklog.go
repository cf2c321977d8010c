package cli

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/untrusted"
)

// TaskLogCmd prints a task's timeline (SPEC §15).
type TaskLogCmd struct {
	ID     string `arg:"" help:"Task id."`
	JSON   bool   `help:"Print the timeline as JSON (with --follow: one entry per line)."`
	Follow bool   `short:"f" help:"Keep printing new entries while the task runs."`
}

// Run prints the entries, then the new ones as they come with --follow.
func (c *TaskLogCmd) Run(g *globals) error {
	client := g.client()
	tl, err := client.Timeline(g.ctx, c.ID, 0, false)
	if err != nil {
		return err
	}
	if c.JSON && !c.Follow {
		return g.printJSON(tl)
	}
	if !c.JSON {
		fmt.Fprintln(g.stdout, untrusted.Terminal(fmt.Sprintf("task %s (%s) on %s: %s", tl.Task.ID, tl.Task.Status, storeName(tl.Task), modeLine(tl))))
	}
	var last int64
	for {
		for _, e := range tl.Entries {
			if c.JSON {
				if err := g.printJSONLine(e); err != nil {
					return err
				}
			} else {
				fmt.Fprintln(g.stdout, entryLine(e))
			}
			last = e.Seq
		}
		if !c.Follow || !tl.Live && len(tl.Entries) == 0 {
			return nil
		}
		if tl, err = client.Timeline(g.ctx, c.ID, last, true); err != nil {
			return err
		}
	}
}

// storeName is the task's store as a line names it.
func storeName(t api.Task) string {
	switch {
	case t.StoreSlug == api.WebKey:
		return "the web browser"
	case t.StoreSlug != "":
		return "store " + t.StoreSlug
	}
	return "no store"
}

// modeLine says what the task's store records.
func modeLine(tl api.Timeline) string {
	switch tl.Mode {
	case api.TimelineOff:
		return "nothing is recorded (" + tl.ModeFrom + " is off)"
	case api.TimelineMeta:
		return "steps without code, output or shots (" + tl.ModeFrom + " is meta)"
	}
	return "every step, with code, output and shots"
}

// entryLine is one entry in the human form: time, kind, the gist; an agent's words are said to be its own,
// and every control character in them, or in what its pages named, is escaped (untrusted.Terminal).
func entryLine(e api.Entry) string {
	gist := ""
	switch {
	case e.Call != nil:
		c := e.Call
		gist = fmt.Sprintf("%s exit %d, %s", c.Outcome, c.Exit, c.End.Sub(c.Start).Round(time.Millisecond))
		if c.Tool != "" {
			gist = fmt.Sprintf("MCP tool %s %s, %s", c.Tool, c.Outcome, c.End.Sub(c.Start).Round(time.Millisecond))
		}
		if e.Slot > 0 {
			gist = "worker " + strconv.Itoa(e.Slot) + ": " + gist
		}
		if code := firstLine(c.Code); code != "" && c.Tool != "" {
			gist += ": the agent's arguments: " + code
		} else if code != "" {
			gist += ": the agent's code: " + code
		} else if c.Rule != "" {
			gist += ": agent says: " + firstLine(c.Rule)
		}
	case e.Shot != nil:
		gist = fmt.Sprintf("tab %s, %d×%d, %s", short(e.Shot.Tab), e.Shot.Width, e.Shot.Height, e.Shot.URL)
		if e.Shot.Bytes == 0 {
			gist += " (its picture was dropped by the size cap)"
		}
	case e.Nav != nil:
		gist = e.Nav.URL
		if e.Nav.Title != "" && e.Nav.Title != e.Nav.URL {
			gist += " " + strconv.Quote(e.Nav.Title)
		}
	case e.Tab != nil:
		gist = strings.TrimSpace(e.Tab.Event + " tab " + short(e.Tab.Tab) + " " + e.Tab.URL)
	case e.Download != nil:
		gist = fmt.Sprintf("%s (%d bytes) %s", e.Download.Name, e.Download.Size, e.Download.Path)
	case e.Handoff != nil:
		gist = e.Handoff.Status
		if e.Handoff.Question != "" {
			gist = "the agent asked: " + e.Handoff.Question
		} else if e.Handoff.Note != "" {
			gist += ": " + e.Handoff.Note
		}
	case e.Takeover != nil:
		gist = strings.TrimSpace(e.Takeover.Event + " tab " + short(e.Takeover.Tab) + " " + byWhom(e.Takeover))
	case e.Fault != nil:
		gist = e.Fault.What
		if e.Fault.Message != "" && e.From == api.FromAgent {
			gist += ": agent says: " + firstLine(e.Fault.Message)
		} else if e.Fault.Message != "" {
			gist += ": " + firstLine(e.Fault.Message)
		}
	}
	return untrusted.Terminal(fmt.Sprintf("%s  %-8s  %s", e.At.Local().Format("15:04:05.000"), e.Kind, gist))
}

func byWhom(t *api.TakeoverEntry) string {
	switch {
	case t.Why != "":
		return "(" + t.Why + ")"
	case t.By != "":
		return "by " + t.By
	}
	return ""
}

// firstLine is s's first non-empty line, cut to 80 characters.
func firstLine(s string) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			if r := []rune(line); len(r) > 80 {
				return string(r[:79]) + "…"
			}
			return line
		}
	}
	return ""
}

// short is a target id's first 8 characters, as the UI shows it.
func short(id string) string { return id[:min(8, len(id))] }

// TaskExportCmd writes a task's timeline as one self-contained HTML file.
type TaskExportCmd struct {
	ID  string `arg:"" help:"Task id."`
	Out string `short:"o" help:"The file to write (default: task-<id>.html here); - for stdout." placeholder:"FILE"`
}

// Run writes the file.
func (c *TaskExportCmd) Run(g *globals) error {
	html, err := g.client().ExportTimeline(g.ctx, c.ID)
	if err != nil {
		return err
	}
	out := c.Out
	if out == "" {
		out = "task-" + c.ID + ".html"
	}
	if out == "-" {
		_, err := g.stdout.Write(html)
		return err
	}
	// 0600: the code, output and pictures of a logged-in store are the owner's to pass on.
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(html); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "wrote %s (%d bytes): open it in any browser, it needs no network\n", out, len(html))
	return nil
}
