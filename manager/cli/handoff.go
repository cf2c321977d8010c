package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/untrusted"
)

// HandoffCmd lists and answers agents' requests for a person's help (browser-use --ask-human).
type HandoffCmd struct {
	List HandoffListCmd `cmd:"" help:"List the handoffs waiting for a person (--all: every handoff)."`
	Done HandoffDoneCmd `cmd:"" help:"Answer a handoff: done (with an optional --note for the agent), or --cant-help."`
}

// HandoffListCmd lists handoffs.
type HandoffListCmd struct {
	All  bool `help:"List every handoff, answered ones included, not only the pending ones."`
	JSON bool `help:"Print JSON: [{id, status, store, task_id, client_id, bu_name, reason, note, created_at, deadline, answered_at, wait_s, url}]."`
}

// Run prints the handoffs, oldest first.
func (c *HandoffListCmd) Run(g *globals) error {
	status := api.HandoffPending
	if c.All {
		status = ""
	}
	hs, err := g.client().ListHandoffs(g.ctx, status)
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(hs)
	}
	if len(hs) == 0 {
		fmt.Fprintln(g.stdout, "no handoff is waiting for a person")
		return nil
	}
	printHandoffs(g.stdout, hs, c.All)
	if !c.All {
		fmt.Fprintln(g.stdout, "\nanswer with: vibe-browser handoff done ID [--note TEXT] (or --cant-help)")
	}
	return nil
}

// printHandoffs is the table of handoffs `handoff list` and `status` print. With answered (handoff list
// --all) it adds each one's status and, last, the person's note, which is what the agent got.
func printHandoffs(out io.Writer, hs []api.Handoff, answered bool) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := "HANDOFF\tSTORE\tTASK\tASKED\tWAITS UNTIL\tREASON"
	if answered {
		head = "HANDOFF\tSTATUS\tSTORE\tTASK\tASKED\tWAITS UNTIL\tREASON\tNOTE"
	}
	fmt.Fprintln(w, head)
	for _, h := range hs {
		status, note := "", ""
		if answered {
			status, note = h.Status+"\t", "\t"+orDash(oneLineText(h.Note))
		}
		fmt.Fprintf(w, "%s\t%s%s\t%s\t%s\t%s\t%s%s\n", h.ID, status, h.Store, orDash(h.TaskID),
			h.CreatedAt.Local().Format(time.DateTime), h.Deadline.Local().Format(time.TimeOnly),
			oneLineText(h.Reason), note)
	}
	w.Flush()
}

// oneLineText is s with its runs of white space (newlines and tabs included: a note may have them) as one
// space, and its control characters escaped (an agent wrote the reason).
func oneLineText(s string) string { return untrusted.Terminal(strings.Join(strings.Fields(s), " ")) }

// HandoffDoneCmd answers a handoff.
type HandoffDoneCmd struct {
	ID       string `arg:"" help:"The handoff's id (vibe-browser handoff list)."`
	Note     string `help:"A note for the agent: what you did, or what it needs (a code, a choice)."`
	CantHelp bool   `name:"cant-help" help:"Tell the agent you cannot help: it records the step as blocked."`
	JSON     bool   `help:"Print the answered handoff as JSON."`
}

// Run records the answer; the waiting agent gets it at once.
func (c *HandoffDoneCmd) Run(g *globals) error {
	status := api.HandoffDone
	if c.CantHelp {
		status = api.HandoffCantHelp
	}
	if err := api.CheckHandoffText("--note", c.Note, api.MaxHandoffNote); err != nil {
		return &usageError{msg: err.Error()}
	}
	h, err := g.client().AnswerHandoff(g.ctx, c.ID, api.HandoffAnswer{Status: status, Note: c.Note})
	if err != nil {
		return err
	}
	if c.JSON {
		return g.printJSON(h)
	}
	if c.CantHelp {
		fmt.Fprintf(g.stdout, "handoff %s: told the agent you cannot help\n", h.ID)
	} else {
		fmt.Fprintf(g.stdout, "handoff %s: done; the agent goes on with its task\n", h.ID)
	}
	return nil
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
