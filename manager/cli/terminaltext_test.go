package cli

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/untrusted"
)

// An agent's code, a page's title and a handoff's reason reach the person's terminal escaped (issue 37):
// task log, its --json, and handoff list. The control: the same commands print plain text as it is.
func TestTaskLogAndHandoffsEscapeControls(t *testing.T) {
	const task = "a1b2c3d4-0001"
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	tl := api.Timeline{Task: api.Task{ID: task, Status: "running", StoreSlug: "acme"}, Mode: api.TimelineFull, Entries: []api.Entry{
		{Seq: 1, At: at, Kind: api.EntryCall, Client: task, From: api.FromAgent, Call: &api.CallReport{Client: task,
			Outcome: api.CallOK, Start: at, End: at.Add(time.Second), Code: "\x1b[2J\x1b[Hprint('\u202eevil')\nmore"}},
		{Seq: 2, At: at, Kind: api.EntryNav, Nav: &api.NavEntry{Tab: "T1", URL: "https://shop.example/", Title: "Shop\x1b]0;pwned\x07"}},
		{Seq: 3, At: at, Kind: api.EntryCall, Client: task, From: api.FromAgent, Call: &api.CallReport{Client: task,
			Outcome: api.CallOK, Start: at, End: at, Code: "print('plain')"}},
	}}
	hs := []api.Handoff{{ID: "aaaa1111", Status: api.HandoffPending, Store: "acme", TaskID: task,
		Reason: "type your password \u202ehere\u0085", CreatedAt: at, Deadline: at.Add(time.Hour)}}
	routes := http.NewServeMux()
	routes.HandleFunc("GET "+api.PathTaskTimeline, answerJSON(tl))
	routes.HandleFunc("GET "+api.PathHandoffs, answerJSON(hs))
	home := serveAPI(t, routes)

	for _, args := range [][]string{{"task", "log", task}, {"task", "log", task, "--json"}, {"handoff", "list"}} {
		code, out, errOut := run(t, append([]string{"--home", home}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d (%s)", args, code, errOut)
		}
		if strings.ContainsFunc(out, func(r rune) bool { return r != '\n' && untrusted.Escaped(r) }) {
			t.Errorf("%v printed a control character raw:\n%q", args, out)
		}
		switch args[len(args)-1] {
		case task:
			for _, want := range []string{`the agent's code: \x1b[2J\x1b[Hprint('\u202eevil')`, `"Shop\x1b]0;pwned`,
				"the agent's code: print('plain')"} {
				if !strings.Contains(out, want) {
					t.Errorf("task log:\n%s\nwant %s", out, want)
				}
			}
		case "--json":
			if !strings.Contains(out, `\u001b[2J`) || !strings.Contains(out, `\u202e`) || !strings.Contains(out, "print('plain')") {
				t.Errorf("task log --json:\n%s\nwant ESC and U+202E as JSON escapes, plain code as it is", out)
			}
		default:
			if !strings.Contains(out, `type your password \u202ehere`) {
				t.Errorf("handoff list:\n%s\nwant the reason's controls escaped", out)
			}
		}
	}
}
