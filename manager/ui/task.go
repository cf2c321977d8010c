package ui

import (
	"bytes"
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/mux/clientid"
)

// The task page (SPEC §15): a task's timeline, its steps in order, drawn by templates/steps.html, which
// Export draws too. While the task runs, task.js asks for the steps after the last one it shows
// (/task/<id>/entries?after=SEQ) and puts them in place: the same templates draw them.

// taskPollEvery is how often, in ms, the live task page asks for new steps (task.js reads it from the
// page): a step is on the page at most that long after the manager recorded it, for one cheap read.
const taskPollEvery = 2000

// taskHref is the task page of id.
// taskHref is the task page of id, relative to the session's base (session.go).
func taskHref(id string) string { return "task/" + url.PathEscape(id) }

// taskPage is the task page's data, and the export's (Export): the head (templates "task-head") and the
// steps ("timeline"). Every link is "" in the export, which names nothing on the network.
type taskPage struct {
	ID        string
	Status    string
	Live      bool   // the task still runs: more steps may come
	Store     string // the slug, api.WebSlug for the web browser
	StoreName string
	StoreHref string // "" in the export, and for a store removed since
	// Mode is the timeline mode (api.TimelineFull, …); ModeWhat says what it records, ModeFrom where the
	// mode comes from, ModeCmd how to change it.
	Mode, ModeWhat, ModeFrom, ModeCmd string
	// Empty says why there is no step yet (EmptyCmd: how to record them), "" when there are.
	Empty, EmptyCmd string
	Steps           []step
	Last            int64     // the seq of the last entry read
	OpenTabs        []openTab // the task's tabs the browser has now, each with its live view
	// The page's own links: its poll for new steps while Live, and the export's download.
	EntriesHref, ExportHref string
	PollEvery               int // ms
}

// openTab is one of the task's tabs open now.
type openTab struct {
	Title string
	Slot  string // "worker 2"; "" for the task's own session
	Href  string
}

// step is one step of the timeline, formatted once here: a call's card, a shot that follows no call
// shown, or one line (a navigation, a tab, a download, a handoff, a takeover, a fault).
type step struct {
	Seq    int64
	Kind   string // an api.Entry kind
	Label  string // the kind, in one word or two
	Time   string // "Jan 2 15:04:05"
	Stamp  string // RFC 3339, the <time> element's datetime
	Slot   string // "worker 2"; "" for the task's own session
	Bad    bool   // something went wrong: marked
	Alert  bool   // a person is asked for something
	What   string // the line's words
	URL    string
	Tab    string // the start of the step's tab's id (shortID), enough to tell the task's tabs apart
	TabID  string // the whole id
	Detail string // a second line: a page's title, a person's note, a fault's message
	Short  bool   // Detail is a page's title: one line on screen, the whole on hover
	Says   string // whose words Detail holds when they are an agent's ("the agent asks:")
	Live   string // the tab's live view while the tab exists
	Href   string // where to act on the step (a pending handoff's card on the overview)
	// AfterOf is, for a shot step, the call it follows: the live page moves it into that call's card when
	// the card is there.
	AfterOf int64
	// InCall is the call a step happened in; Inner, for a call, those steps, drawn inside its card.
	InCall   int64
	Inner    []step
	Call     *callStep
	Shots    []shotView // a call's shots, or a shot step's one
	Download *downloadStep
	handoff  string // a handoff step's handoff id
}

// callStep is a call's card.
type callStep struct {
	Command  string // "browser-use open https://…"
	Session  string
	Duration string
	Outcome  string // "failed · exit 1"
	Class    string // the outcome's pill: "ok" or "bad"
	Rule     string // the shim's message for a refused or failed call
	Code     string
	CodeName string // "Code"; "Arguments" for an MCP tool's
	CodeInfo string // "12 lines", and whether it was cut
	Outputs  []callOutput
	Untold   string // the streams the shim did not see
	NoText   string // why neither code nor output shows
}

type callOutput struct {
	Name string // stdout, stderr
	Text string
	Cut  bool
}

// shotView is one shot: a thumbnail that opens full size.
type shotView struct {
	Seq     int64
	Src     any    // the picture: its path on the page, a data: URL (template.URL) in the export; nil when gone
	Full    string // the picture alone (the page only)
	Alt     string
	Caption string
	URL     string
	Width   int
	Height  int
	Gone    string // why the picture is not shown
}

type downloadStep struct {
	Name   string
	Size   string
	SHA256 string
	Href   string // the file as an attachment (the page only)
}

// The mode's words (taskPage.ModeWhat).
var modeWhat = map[string]string{
	api.TimelineFull: "Recorded: each browser-use call and MCP tool call with its code (or arguments) and output, shots of the task's tabs after each call, and the steps in and between them.",
	api.TimelineMeta: "Recorded: the steps only (each call's time and outcome, navigations, tabs, downloads, handoffs, takeovers), no code, output or shots.",
	api.TimelineOff:  "Nothing is recorded for this task's store now.",
}

// modeFacts fills p's mode lines from tl, and its empty state when tl has no entry.
func (p *taskPage) modeFacts(tl api.Timeline) {
	store := p.Store
	if store == "" {
		store = "STORE" // a store removed since: its slug is not known
	}
	p.Mode, p.ModeWhat = tl.Mode, modeWhat[tl.Mode]
	if p.ModeWhat != "" {
		if tl.ModeFrom == "store" {
			p.ModeFrom = "The mode, " + tl.Mode + ", is the store's own setting; change it with"
		} else {
			p.ModeFrom = "The mode, " + tl.Mode + ", is the manager's VIBE_TIMELINE; change it with"
		}
		if store == api.WebSlug {
			p.ModeCmd = "VIBE_TIMELINE=full|meta|off (the manager's environment)"
		} else {
			p.ModeCmd = "vibe-browser store set " + store + " --timeline full|meta|off"
		}
	}
	if len(tl.Entries) > 0 {
		return
	}
	switch {
	case tl.Mode == api.TimelineOff:
		p.Empty = "Nothing is recorded for this task: its store's timeline is off. To record its next steps:"
		if store == api.WebSlug {
			p.Empty += " start the manager with"
			p.EmptyCmd = "VIBE_TIMELINE=full"
		} else {
			p.EmptyCmd = "vibe-browser store set " + store + " --timeline full"
		}
	case !tl.Live:
		p.Empty = "This task has no recorded step: it made no browser-use call while the timeline was on, " +
			"or its steps are older than VIBE_TIMELINE_KEEP_DAYS and were pruned."
	case tl.Mode == api.TimelineMeta:
		p.Empty = "No step yet: they appear here as the agent works. This store records the steps only: " +
			"no code, output or shots."
	default:
		p.Empty = "Nothing happened yet: the steps appear here as the agent works, each call with its code, " +
			"output and shots."
	}
}

// stepBuilder turns entries into steps.
type stepBuilder struct {
	task string
	mode string
	// export draws the export: pictures inline from shot, and no link at all; the page's pictures and
	// files are links of this UI.
	export bool
	shot   func(seq int64) ([]byte, error)
	// live are the live views of the task's open tabs, by tab id (the page only).
	live map[string]string
}

// steps formats entries, oldest first, each shot inside the card of the call it follows and each step
// inside the card of the call it happened in, when that call is among them.
func (b stepBuilder) steps(entries []api.Entry) []step {
	present := map[int64]bool{}
	for _, e := range entries {
		if e.Call != nil {
			present[e.Seq] = true
		}
	}
	calls := map[int64]int{}    // call seq -> its index in out
	inner := map[int64][]step{} // call seq -> the steps that happened in it
	out := make([]step, 0, len(entries))
	for _, e := range entries {
		if e.Kind == api.EntryShot && e.Shot != nil {
			if i, ok := calls[e.Shot.AfterOf]; ok {
				out[i].Shots = append(out[i].Shots, b.shotView(e))
				continue
			}
		}
		st := b.step(e)
		if e.InCall != 0 && present[e.InCall] {
			st.Time = e.At.Local().Format("15:04:05") // its card says the day
			inner[e.InCall] = append(inner[e.InCall], st)
			continue
		}
		if e.Kind == api.EntryCall {
			calls[e.Seq] = len(out)
		}
		out = append(out, st)
	}
	for seq, i := range calls {
		out[i].Inner = inner[seq]
	}
	// A handoff answered further down needs no link to its card on the overview any more.
	answered := map[string]bool{}
	for _, e := range entries {
		if e.Handoff != nil && e.Handoff.Status != api.HandoffPending {
			answered[e.Handoff.ID] = true
		}
	}
	for i := range out {
		if out[i].handoff != "" && answered[out[i].handoff] {
			out[i].Href = ""
		}
	}
	return out
}

// step formats one entry (a shot: a step of its own).
func (b stepBuilder) step(e api.Entry) step {
	st := step{Seq: e.Seq, Kind: e.Kind, Label: e.Kind, Time: stamp(e.At), Stamp: e.At.Format("2006-01-02T15:04:05Z07:00"),
		InCall: e.InCall}
	slot := e.Slot
	if slot == 0 && e.Call != nil {
		slot = e.Call.Slot
	}
	if slot > 0 {
		st.Slot = "worker " + strconv.Itoa(slot)
	}
	tab := func(id string) {
		st.TabID, st.Tab = id, shortID(id)
		st.Live = b.live[id]
	}
	switch {
	case e.Call != nil:
		st.Label = "call"
		st.Call, st.Bad = b.callStep(*e.Call)
		if !e.Call.Start.IsZero() {
			st.Time, st.Stamp = stamp(e.Call.Start), e.Call.Start.Format("2006-01-02T15:04:05Z07:00")
		}
	case e.Shot != nil:
		st.Label, st.AfterOf = "shot", e.Shot.AfterOf
		st.Shots = []shotView{b.shotView(e)}
	case e.Nav != nil:
		st.Label, st.What, st.URL, st.Detail, st.Short = "page", "Went to", e.Nav.URL, e.Nav.Title, true
		tab(e.Nav.Tab)
	case e.Tab != nil:
		st.Label, st.URL = "tab", e.Tab.URL
		tab(e.Tab.Tab)
		switch e.Tab.Event {
		case api.TabCreated:
			st.What = "Opened a tab"
		case api.TabClosed:
			st.What, st.Live = "Closed a tab", ""
		default:
			st.What = "Tab " + e.Tab.Event
		}
	case e.Download != nil:
		d := e.Download
		st.Label, st.What, st.URL = "download", "Downloaded", d.URL
		st.Download = &downloadStep{Name: d.Name, Size: byteSize(d.Size), SHA256: d.SHA256}
		if !b.export {
			st.Download.Href = taskHref(b.task) + "/download/" + strconv.FormatInt(d.ID, 10)
		}
	case e.Handoff != nil:
		h := e.Handoff
		st.Label, st.handoff = "person", h.ID
		switch h.Status {
		case api.HandoffPending:
			st.What, st.Detail, st.Alert, st.Says = "Asked a person for help.", h.Question, true, "The agent asks:"
			if !b.export {
				st.Href = "./#handoff-" + url.PathEscape(h.ID)
			}
		case api.HandoffDone:
			st.What, st.Detail = "A person answered: done.", h.Note
		case api.HandoffCantHelp:
			st.What, st.Detail, st.Bad = "A person could not help.", h.Note, true
		case api.HandoffTimedOut:
			st.What, st.Bad = "Nobody answered in time: the agent was told to record the step as blocked.", true
		case api.HandoffCancelled:
			st.What = "The agent stopped waiting for a person."
		default:
			st.What, st.Detail = "Handoff "+h.Status, h.Note
		}
		if st.Detail != "" && h.Status != api.HandoffPending {
			st.Detail = "Note: " + st.Detail
		}
	case e.Takeover != nil:
		t := e.Takeover
		st.Label = "takeover"
		tab(t.Tab)
		switch t.Event {
		case api.TakeoverTook:
			st.What, st.Alert = "A person took the tab over: until they gave it back, the agent's commands on it were refused.", true
			if t.By != "" {
				st.Detail = "Taken by " + t.By
			}
		case api.TakeoverGave:
			st.What = "The tab was given back to the agent."
			if t.Why != "" {
				st.Detail = t.Why
			}
		default:
			st.What = "Takeover " + t.Event
		}
	case e.Fault != nil:
		st.Label, st.Bad, st.Detail = "fault", e.Fault.What != api.FaultLoginRestored, e.Fault.Message
		if !st.Bad {
			st.Label = "login"
		}
		if e.From == api.FromAgent {
			st.Says = "The agent's report:"
		}
		st.What = faultWhat[e.Fault.What]
		if st.What == "" {
			st.What = "Fault: " + e.Fault.What
		}
	default:
		st.What = "A step of a kind this page does not know (" + e.Kind + ")."
	}
	return st
}

var faultWhat = map[string]string{
	api.FaultTimeout:  "A call timed out (exit 142): its session's browser-use daemon was reloaded.",
	api.FaultWedge:    "A session was given up after timing out twice (exit 75).",
	api.FaultCrash:    "The browser died under the task.",
	api.FaultRelaunch: "The browser was started again under the task.",
	api.FaultQuota:    "The task's timeline is full: its next steps are not kept.",
	// Not a fault of the task's: its login was saved (SPEC §18).
	api.FaultLoginRestored: "The browser came back with its login: cookies it had lost were set back from the store's checkpoint.",
}

// outcomes say a call's outcome in words; a bad one is marked.
var outcomes = map[string]struct {
	words string
	bad   bool
}{
	api.CallOK:          {"ok", false},
	api.CallFailed:      {"failed", true},
	api.CallRefused:     {"refused", true},
	api.CallUnavailable: {"no browser", true},
	api.CallTimeout:     {"timed out", true},
	api.CallWedged:      {"wedged", true},
	api.CallAskHuman:    {"asked a person", false},
}

func (b stepBuilder) callStep(c api.CallReport) (*callStep, bool) {
	cs := &callStep{Command: command(c.Args), Session: c.Session, Rule: c.Rule, CodeName: "Code"}
	switch {
	case c.Tool != "":
		cs.Command, cs.CodeName = "MCP tool "+c.Tool, "Arguments"
	case len(c.Args) == 0 && c.Code != "":
		cs.Command += " (code on stdin)"
	}
	if !c.Start.IsZero() && !c.End.IsZero() {
		cs.Duration = callDuration(c.End.Sub(c.Start))
	}
	o, known := outcomes[c.Outcome]
	if !known {
		o.words, o.bad = c.Outcome, c.Exit != 0
	}
	bad := o.bad || c.Exit != 0
	cs.Outcome = o.words + " · exit " + strconv.Itoa(c.Exit)
	if c.Tool != "" {
		cs.Outcome = o.words // an MCP tool has no exit status: ok, or failed
	}
	cs.Class = "ok"
	if bad {
		cs.Class = "bad"
	}
	if c.Code != "" {
		cs.Code = c.Code
		cs.CodeInfo = plural(strings.Count(strings.TrimSuffix(c.Code, "\n"), "\n")+1, "line")
		if c.CodeCut {
			cs.CodeInfo += "; cut at " + byteSize(api.CallCodeMax) + ": the agent sent more"
		}
	}
	outs := []callOutput{{"stdout", c.Stdout, c.StdoutCut}, {"stderr", c.Stderr, c.StderrCut}}
	if c.Tool != "" {
		outs = outs[:1]
		outs[0].Name = "result"
	}
	for _, o := range outs {
		if o.Text != "" || o.Cut {
			cs.Outputs = append(cs.Outputs, o)
		}
	}
	if len(c.Untold) > 0 {
		// A bare stream's name was a terminal or a device; the others say why themselves.
		why := make([]string, len(c.Untold))
		for i, u := range c.Untold {
			why[i] = u
			if !strings.Contains(u, "(") {
				why[i] += " (a terminal or device, passed to browser-use as it was)"
			}
		}
		cs.Untold = "Not recorded: " + joinAnd(why) + "."
	}
	if cs.Code == "" && len(cs.Outputs) == 0 && cs.Untold == "" {
		cs.NoText = "No code on stdin and no output."
		if b.mode == api.TimelineMeta {
			cs.NoText = "No code or output: this store's timeline records the steps only (meta)."
		}
	}
	return cs, bad
}

// shotView formats a shot entry: on the page its picture is a link of this UI, in the export inline.
func (b stepBuilder) shotView(e api.Entry) shotView {
	sh := e.Shot
	v := shotView{Seq: e.Seq, URL: sh.URL, Width: sh.Width, Height: sh.Height, Caption: sh.Title}
	if v.Caption == "" {
		v.Caption = "tab " + shortID(sh.Tab)
	}
	v.Alt = "The tab " + shortID(sh.Tab) + " after the call: " + v.Caption
	switch {
	case sh.Bytes == 0:
		v.Gone = "This shot's picture was dropped (the task's size cap or the retention)."
	case !b.export:
		v.Full = taskHref(b.task) + "/shot/" + strconv.FormatInt(e.Seq, 10)
		v.Src = v.Full
	case b.shot == nil:
		v.Gone = "This shot's picture is left out of the export."
	default:
		jpeg, err := b.shot(e.Seq)
		if err != nil {
			v.Gone = "This shot's picture is left out: " + err.Error()
		} else {
			v.Src = dataURL(jpeg)
		}
	}
	return v
}

// basePage is the task page of tl as far as tl says: the export's whole head. Its store is the task's
// slug, the web browser, or, for a store removed since, its id with no slug.
func basePage(tl api.Timeline) taskPage {
	p := taskPage{ID: tl.Task.ID, Status: tl.Task.Status, Live: tl.Live, Store: tl.Task.StoreSlug,
		StoreName: tl.Task.StoreSlug}
	if p.Status == "" {
		p.Status = "unknown"
	}
	switch {
	case tl.Task.Store == "":
		p.Store, p.StoreName = api.WebSlug, "Web browser"
	case p.Store == "":
		p.StoreName = tl.Task.Store
	}
	return p
}

// taskPage is the task page of tl, whose entries are those after after: with the store's name and page,
// and the live views of the task's tabs open in its running browser.
func (s *Server) taskPage(ctx context.Context, tl api.Timeline, after int64) taskPage {
	id := tl.Task.ID
	p := basePage(tl)
	p.EntriesHref, p.ExportHref, p.PollEvery, p.Last = taskHref(id)+"/entries", taskHref(id)+"/export", taskPollEvery, after
	if tl.Task.Store != "" {
		if st, err := s.cfg.Source.Status(ctx); err == nil {
			for _, store := range st.Stores {
				if store.ID == tl.Task.Store {
					p.Store, p.StoreName = store.Slug, store.Name
				}
			}
		}
	}
	p.modeFacts(tl)
	live := map[string]string{}
	if p.Store != "" {
		p.StoreHref = storeHref(p.Store)
		p.OpenTabs = s.openTabs(ctx, p.Store, id, live)
	}
	p.Steps = stepBuilder{task: id, mode: tl.Mode, live: live}.steps(s.withEarlierSteps(ctx, id, tl.Entries, after))
	if n := len(tl.Entries); n > 0 {
		p.Last = max(after, tl.Entries[n-1].Seq)
	}
	return p
}

// withEarlierSteps is entries after seq after with, in front of them, the steps of their calls that came
// before after: the live page drew those between the cards while the call ran, and draws them again inside
// the call's card now that it is there (task.js takes the old ones away).
func (s *Server) withEarlierSteps(ctx context.Context, task string, entries []api.Entry, after int64) []api.Entry {
	if after == 0 {
		return entries
	}
	var earlier []api.Entry
	for _, e := range entries {
		if e.Call == nil {
			continue
		}
		steps, err := s.cfg.Source.CallSteps(ctx, task, e.Seq)
		if err != nil {
			s.cfg.Log.Warn().Err(err).Str("task", task).Msg("read a call's steps")
			continue
		}
		for _, st := range steps {
			if st.Seq <= after {
				earlier = append(earlier, st)
			}
		}
	}
	if len(earlier) == 0 {
		return entries
	}
	slices.SortFunc(earlier, func(a, b api.Entry) int { return cmp.Compare(a.Seq, b.Seq) })
	return append(earlier, entries...)
}

// openTabs are the page tabs of task's clients (its --worker slots included) in slug's running browser;
// live gets each one's live view by tab id.
func (s *Server) openTabs(ctx context.Context, slug, task string, live map[string]string) []openTab {
	br, err := s.cfg.Source.Browser(ctx, slug)
	if err != nil {
		return nil // stopped, or gone: no tab to watch
	}
	var tabs []openTab
	for _, c := range br.Clients() {
		if clientid.OwnerDir(c.ID) != task {
			continue
		}
		slot := ""
		if m := workerSlot.FindStringSubmatch(c.ID); m != nil {
			slot = "worker " + m[2]
		}
		for _, t := range c.Tabs {
			if t.Type != "page" {
				continue
			}
			href := tabHref(slug, t.ID)
			live[t.ID] = href
			title := t.Title
			if title == "" {
				title = t.URL
			}
			tabs = append(tabs, openTab{Title: title, Slot: slot, Href: href})
		}
	}
	return tabs
}

func (s *Server) noTask(w http.ResponseWriter, r *http.Request) {
	// The id is the URL's: never echoed (notices.go says why).
	s.message(w, r, http.StatusNotFound, "No such task",
		"The manager knows no task of this address: its id may be mistyped, or the task and its timeline are older than "+
			"VIBE_TIMELINE_KEEP_DAYS and were pruned.",
		"Go to the overview for the tasks there are; vibe-browser task log ID prints a task's steps in a terminal.", "./")
}

// timeline reads id's timeline after after, or answers why it cannot.
func (s *Server) timeline(w http.ResponseWriter, r *http.Request, id string, after int64) (api.Timeline, bool) {
	tl, err := s.cfg.Source.Timeline(r.Context(), id, after)
	switch {
	case errors.Is(err, ErrNoTask):
		s.noTask(w, r)
		return tl, false
	case err != nil:
		s.message(w, r, http.StatusServiceUnavailable, "The task's timeline could not be read", err.Error(),
			"Reload the page; the manager's log says more.", "./")
		return tl, false
	}
	if tl.Task.ID == "" {
		tl.Task.ID = id
	}
	return tl, true
}

func (s *Server) handleTask(w http.ResponseWriter, r *http.Request) {
	tl, ok := s.timeline(w, r, r.PathValue("id"), 0)
	if !ok {
		return
	}
	s.render(w, r, http.StatusOK, "task", s.taskPage(r.Context(), tl, 0))
}

// handleTaskEntries is the live task page's poll: the head again, and the steps after ?after=SEQ, drawn by
// the page's templates ("entries").
func (s *Server) handleTaskEntries(w http.ResponseWriter, r *http.Request) {
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if err != nil || after < 0 {
		s.plain(w, http.StatusBadRequest, "after must be the seq of the last step shown (0 for none)")
		return
	}
	tl, ok := s.timeline(w, r, r.PathValue("id"), after)
	if !ok {
		return
	}
	var buf bytes.Buffer
	if err := s.pages["task"].ExecuteTemplate(&buf, "entries", s.taskPage(r.Context(), tl, after)); err != nil {
		s.cfg.Log.Error().Err(err).Msg("render a task's new steps")
		s.plain(w, http.StatusInternalServerError, "the steps could not be rendered; the manager's log says why")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// handleShot serves a shot's JPEG. A shot never changes, so the viewer's browser may keep it.
func (s *Server) handleShot(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	seq, err := strconv.ParseInt(r.PathValue("seq"), 10, 64)
	if err != nil {
		s.plain(w, http.StatusNotFound, "no shot: this address names no step's number")
		return
	}
	jpeg, err := s.cfg.Source.Shot(r.Context(), id, seq)
	switch {
	case errors.Is(err, ErrNoShot) || errors.Is(err, ErrNoTask):
		s.plain(w, http.StatusNotFound, "no shot: "+err.Error())
		return
	case err != nil:
		s.plain(w, http.StatusServiceUnavailable, "no shot: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, max-age=86400")
	w.Header().Set("Content-Length", strconv.Itoa(len(jpeg)))
	_, _ = w.Write(jpeg)
}

// handleTaskDownload serves one of the task's downloads as an attachment: never shown in the UI's origin,
// whatever the file is.
func (s *Server) handleTaskDownload(w http.ResponseWriter, r *http.Request) {
	id, raw := r.PathValue("id"), r.PathValue("did")
	noFile := func(why string) {
		s.message(w, r, http.StatusNotFound, "No such download", why,
			"Go back to the task page for its downloads; vibe-browser downloads --task ID lists them.", "")
	}
	did, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		noFile("This address names no download's number.")
		return
	}
	f, d, err := s.cfg.Source.DownloadFile(r.Context(), did)
	switch {
	case errors.Is(err, ErrNoDownload):
		noFile("The download " + raw + " is not there: " + err.Error())
		return
	case err != nil:
		s.message(w, r, http.StatusServiceUnavailable, "The download could not be read", err.Error(),
			"Try again; the manager's log says more.", "")
		return
	}
	defer f.Close()
	if d.Task != id {
		noFile("This task has no download of that number.")
		return
	}
	disposition := mime.FormatMediaType("attachment", map[string]string{"filename": d.Name})
	if disposition == "" {
		disposition = "attachment"
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Disposition", disposition)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "private, no-store")
	http.ServeContent(w, r, "", d.At, f)
}

// handleTaskExport serves the task's timeline as one self-contained HTML file (Export), as `vibe-browser
// task export` writes it.
func (s *Server) handleTaskExport(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	tl, ok := s.timeline(w, r, id, 0)
	if !ok {
		return
	}
	var buf bytes.Buffer
	err := Export(&buf, tl, func(seq int64) ([]byte, error) { return s.cfg.Source.Shot(r.Context(), id, seq) })
	if err != nil {
		s.cfg.Log.Error().Err(err).Msg("export a task's timeline")
		s.plain(w, http.StatusInternalServerError, "the export could not be rendered; the manager's log says why")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "task-" + id + ".html"}))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(buf.Len()))
	_, _ = w.Write(buf.Bytes())
}

// Small formatting helpers of the steps.

// stamp is a step's time for a person, in the manager's time zone.
func stamp(t time.Time) string { return t.Local().Format("Jan 2 15:04:05") }

// shortID is the start of a long id (a tab's target id), enough to tell a task's tabs apart.
func shortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

// joinAnd is "a", "a and b", "a, b and c".
func joinAnd(xs []string) string {
	if len(xs) < 2 {
		return strings.Join(xs, "")
	}
	return strings.Join(xs[:len(xs)-1], ", ") + " and " + xs[len(xs)-1]
}

// callDuration is a call's length: milliseconds under a second, tenths of a second under a minute.
func callDuration(d time.Duration) string {
	switch {
	case d < 0:
		return ""
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
}

// command is a call's command line as the agent typed it, its arguments quoted where a shell would need it.
func command(args []string) string {
	out := []string{"browser-use"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"$`\\|&;<>()*?[]{}~#!") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out = append(out, a)
	}
	return strings.Join(out, " ")
}

// dataURL is a JPEG inline, for the export.
func dataURL(jpeg []byte) template.URL {
	return template.URL("data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(jpeg))
}
