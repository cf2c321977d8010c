package api

import (
	"time"
	"unicode/utf8"
)

// The task timeline's routes (SPEC §15).
const (
	// PathTaskCalls takes a shim's report of one browser-use call's end (POST, a CallReport); it is served
	// on the owner socket and, for the task's own token, on run/agent.sock.
	PathTaskCalls = "/v1/tasks/{id}/calls"
	// PathTaskTimeline lists a task's timeline (GET, a Timeline); ?after=SEQ returns only the entries after
	// that seq, ?wait=1 holds the answer until there is one (or 25 s pass) for a follower.
	PathTaskTimeline = "/v1/tasks/{id}/timeline"
	// PathTaskShot serves one shot's JPEG (GET).
	PathTaskShot = "/v1/tasks/{id}/timeline/{seq}/shot"
	// PathTaskExport serves the task's timeline as one self-contained HTML file (GET).
	PathTaskExport = "/v1/tasks/{id}/export"
)

// The timeline modes (VIBE_TIMELINE, `store set --timeline`).
const (
	TimelineFull = "full" // everything: calls with their code and output, shots, and the steps between
	TimelineMeta = "meta" // the steps without code, output or shots
	TimelineOff  = "off"  // nothing is recorded
)

// The kinds of timeline entries (Entry.Kind).
const (
	EntryCall     = "call"
	EntryShot     = "shot"
	EntryNav      = "nav"
	EntryTab      = "tab"
	EntryDownload = "download"
	EntryHandoff  = "handoff"
	EntryTakeover = "takeover"
	EntryFault    = "fault"
)

// The outcomes of a call (CallReport.Outcome): what the shim made of it.
const (
	CallOK          = "ok"          // the real CLI ran and exited 0
	CallFailed      = "failed"      // the real CLI ran and exited non-zero (its own failure)
	CallRefused     = "refused"     // the shim refused the call (a session or --worker rule); Rule says which
	CallUnavailable = "unavailable" // no browser (69), or the real CLI is missing
	CallTimeout     = "timeout"     // the call timed out and the session's daemon was reloaded (142)
	CallWedged      = "wedged"      // timed out again: the session is given up (75)
	CallAskHuman    = "ask-human"   // an --ask-human call (its handoff is an entry of its own)
)

// Bounds of what a call entry keeps (SPEC §15). The shim keeps no more, and the manager cuts a report that
// holds more (CallReport.Cut): it comes from the agent's side.
const (
	CallCodeMax   = 64 << 10 // the code (stdin) kept, from its start; longer is cut and marked
	CallOutputMax = 16 << 10 // the tail of stdout and of stderr kept
	CallArgsMax   = 16 << 10 // the arguments kept, from the first; longer are cut and marked
	CallRuleMax   = 4 << 10  // the shim's message kept, from its start
	callUntoldMax = 3        // the streams a report may name untold: stdin, stdout, stderr
	callWordMax   = 100      // the bytes of one of them
)

// CallReport is a shim's report of one call's end (POST PathTaskCalls), sent once, best effort.
type CallReport struct {
	Client  string `json:"client"`  // the mux client id (a --worker slot's is <task>-wN)
	Session string `json:"session"` // BU_NAME
	Slot    int    `json:"slot,omitempty"`
	// Tool is the MCP tool of a call an MCP server answered (SPEC §17: `vibe-browser mcp` records each
	// tools/call), "" for a browser-use call; its arguments are Code (JSON) and its result's text Stdout.
	Tool    string    `json:"tool,omitempty"`
	Args    []string  `json:"args,omitempty"` // the arguments the agent gave browser-use, at most CallArgsMax bytes
	ArgsCut bool      `json:"args_cut,omitempty"`
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	Exit    int       `json:"exit"` // the shim's exit status
	Outcome string    `json:"outcome"`
	Rule    string    `json:"rule,omitempty"` // the shim's message for a refused or failed call
	// Code is the stdin the agent sent, its first CallCodeMax bytes (CodeCut: there was more).
	Code    string `json:"code,omitempty"`
	CodeCut bool   `json:"code_cut,omitempty"`
	// Stdout and Stderr are the streams' last CallOutputMax bytes (…Cut: earlier bytes were dropped).
	Stdout    string `json:"stdout,omitempty"`
	StdoutCut bool   `json:"stdout_cut,omitempty"`
	Stderr    string `json:"stderr,omitempty"`
	StderrCut bool   `json:"stderr_cut,omitempty"`
	// Untold names what the shim did not see: "stdin", "stdout", "stderr" when that stream was a terminal
	// (passed to the CLI as it was), or kept open by a process the CLI left behind.
	Untold []string `json:"untold,omitempty"`
}

// Cut bounds what the report holds, as the shim would have: the code's first CallCodeMax bytes, each
// output's last CallOutputMax, the arguments' first CallArgsMax, the message's first CallRuleMax (each cut
// at a character and marked), and a few short untold names. It reports whether anything was cut.
func (r *CallReport) Cut() bool {
	cut := false
	if len(r.Code) > CallCodeMax {
		r.Code, r.CodeCut, cut = head(r.Code, CallCodeMax), true, true
	}
	if len(r.Stdout) > CallOutputMax {
		r.Stdout, r.StdoutCut, cut = tail(r.Stdout, CallOutputMax), true, true
	}
	if len(r.Stderr) > CallOutputMax {
		r.Stderr, r.StderrCut, cut = tail(r.Stderr, CallOutputMax), true, true
	}
	if len(r.Rule) > CallRuleMax {
		r.Rule, cut = head(r.Rule, CallRuleMax-len(" [cut]"))+" [cut]", true
	}
	left := CallArgsMax
	for i, a := range r.Args {
		if len(a) > left {
			r.Args, r.ArgsCut, cut = append(r.Args[:i:i], head(a, left)), true, true
			break
		}
		left -= len(a)
	}
	if len(r.Tool) > callWordMax {
		r.Tool, cut = head(r.Tool, callWordMax), true
	}
	if len(r.Untold) > callUntoldMax {
		r.Untold, cut = r.Untold[:callUntoldMax], true
	}
	for i, u := range r.Untold {
		if len(u) > callWordMax {
			r.Untold[i], cut = head(u, callWordMax), true
		}
	}
	return cut
}

// head is s's first n bytes at most, cut before a character that would not fit whole.
func head(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// tail is s's last n bytes at most, cut after a character that would not fit whole.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// Timeline is a task's timeline as GET PathTaskTimeline answers it.
type Timeline struct {
	Task Task `json:"task"`
	// Mode is the timeline mode of the task's store now (TimelineFull, TimelineMeta, TimelineOff), and
	// ModeFrom where it comes from ("VIBE_TIMELINE" or "store"), for a page that explains an empty one.
	Mode     string  `json:"mode"`
	ModeFrom string  `json:"mode_from"`
	Entries  []Entry `json:"entries"`
	// Live reports the task is still running: more entries may come.
	Live bool `json:"live"`
}

// Entry is one step of a task's timeline. Exactly one of the kind's fields is set.
type Entry struct {
	Seq    int64     `json:"seq"`
	At     time.Time `json:"at"`
	Kind   string    `json:"kind"`
	Client string    `json:"client,omitempty"` // the mux client; a --worker slot's is <task>-wN
	Slot   int       `json:"slot,omitempty"`   // that slot's N, 0 for the task's own session
	// From is FromAgent for an entry that holds an agent's words (a call's report: its code, arguments,
	// output and message; a fault a report told; a handoff's question), else FromManager.
	From string `json:"from,omitempty"`
	// InCall is, for a step (nav, tab, download, fault) of the client's that happened while one of its calls
	// ran, that call's seq; 0 for a step outside any call (a person's takeover, a handoff).
	InCall int64 `json:"in_call,omitempty"`

	Call     *CallReport    `json:"call,omitempty"`
	Shot     *ShotEntry     `json:"shot,omitempty"`
	Nav      *NavEntry      `json:"nav,omitempty"`
	Tab      *TabEntry      `json:"tab,omitempty"`
	Download *Download      `json:"download,omitempty"`
	Handoff  *HandoffEntry  `json:"handoff,omitempty"`
	Takeover *TakeoverEntry `json:"takeover,omitempty"`
	Fault    *FaultEntry    `json:"fault,omitempty"`
}

// Body is e's kind and its one kind field that is set (a *CallReport, *NavEntry, …); "" and nil when none is.
// An entry is recorded as its Body: the same value goes from the shim's report or the manager's step to the
// state and back to the API and the page.
func (e Entry) Body() (kind string, body any) {
	switch {
	case e.Call != nil:
		return EntryCall, e.Call
	case e.Shot != nil:
		return EntryShot, e.Shot
	case e.Nav != nil:
		return EntryNav, e.Nav
	case e.Tab != nil:
		return EntryTab, e.Tab
	case e.Download != nil:
		return EntryDownload, e.Download
	case e.Handoff != nil:
		return EntryHandoff, e.Handoff
	case e.Takeover != nil:
		return EntryTakeover, e.Takeover
	case e.Fault != nil:
		return EntryFault, e.Fault
	}
	return "", nil
}

// ShotEntry is a tab's pixels after a call. Bytes is 0 once the size cap dropped its file.
type ShotEntry struct {
	Tab     string `json:"tab"` // the target id
	URL     string `json:"url,omitempty"`
	Title   string `json:"title,omitempty"`
	AfterOf int64  `json:"after_of"` // the seq of the call it follows
	Width   int    `json:"width,omitempty"`
	Height  int    `json:"height,omitempty"`
	Bytes   int64  `json:"bytes"`
}

// NavEntry is a top-level navigation of one of the task's tabs.
type NavEntry struct {
	Tab   string `json:"tab"`
	URL   string `json:"url"`
	Title string `json:"title,omitempty"`
}

// The events of a TabEntry and a TakeoverEntry.
const (
	TabCreated   = "created"
	TabClosed    = "closed"
	TakeoverTook = "took"
	TakeoverGave = "released"
)

// TabEntry is a tab of the task created or closed.
type TabEntry struct {
	Tab   string `json:"tab"`
	Event string `json:"event"` // TabCreated, TabClosed
	URL   string `json:"url,omitempty"`
}

// HandoffEntry is a handoff asked (Status pending) or ended (its final status, the person's note).
type HandoffEntry struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Question string `json:"question,omitempty"`
	Note     string `json:"note,omitempty"`
}

// TakeoverEntry is a person taking one of the task's tabs, or giving it back.
type TakeoverEntry struct {
	Tab   string `json:"tab"`
	Event string `json:"event"` // TakeoverTook, TakeoverGave
	By    string `json:"by,omitempty"`
	Why   string `json:"why,omitempty"` // why a hold ended, when not by its holder
}

// The faults of a FaultEntry.
const (
	FaultTimeout  = "timeout"  // a call timed out (142)
	FaultWedge    = "wedge"    // a session given up (75)
	FaultCrash    = "crash"    // the browser died under the task
	FaultRelaunch = "relaunch" // the browser was started again under the task
	FaultQuota    = "quota"    // the task's timeline is full (VIBE_TIMELINE_MAX_MB): its calls are no longer kept
	// FaultLoginRestored: the browser had lost cookies (a crash, a razed cookie database) and its launch set
	// them back from the login checkpoint (SPEC §18).
	FaultLoginRestored = "login_restored"
)

// FaultEntry is something that went wrong under the task.
type FaultEntry struct {
	What    string `json:"what"`
	Message string `json:"message,omitempty"`
}
