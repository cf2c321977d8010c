package ui

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/mux/clientid"
)

// handoffRow is a pending handoff on the overview: what the agent asks, and its tabs one click away.
type handoffRow struct {
	ID        string
	Store     string // slug, "web"
	StoreHref string
	Task      string // "–" without a task
	TaskHref  string // its task page; "" without a task
	Session   string
	Reason    string
	Asked     string // "4 min ago"
	Left      string // "11 min left"
	Tabs      []handoffTab
	NoTabs    string // why no tab is listed, for a person
	Token     string // the viewer's form token (formToken), for the answer's form
	asked     time.Time
}

type handoffTab struct {
	Title string
	URL   string
	Href  string
}

// handoffGroup is one task's pending handoffs: its newest first, shown whole, and the earlier ones folded
// under it, so that no task's questions push another's down the page.
type handoffGroup struct {
	Newest  handoffRow
	Earlier []handoffRow
	More    string // "2 earlier requests of this task"
}

// handoffGroups groups rows by task (a handoff of no task is a group of its own), the group whose newest
// request is newest first, and in each group the newest request first (issue 37).
func handoffGroups(rows []handoffRow) []handoffGroup {
	byTask := map[string][]handoffRow{}
	var order []string
	for _, r := range rows {
		key := r.Store + "\x00" + r.TaskHref
		if r.TaskHref == "" {
			key += "\x00" + r.ID
		}
		if _, ok := byTask[key]; !ok {
			order = append(order, key)
		}
		byTask[key] = append(byTask[key], r)
	}
	groups := make([]handoffGroup, 0, len(order))
	for _, key := range order {
		rs := byTask[key]
		slices.SortStableFunc(rs, func(a, b handoffRow) int { return b.asked.Compare(a.asked) })
		g := handoffGroup{Newest: rs[0], Earlier: rs[1:]}
		if n := len(g.Earlier); n > 0 {
			g.More = plural(n, "earlier request") + " of this task"
		}
		groups = append(groups, g)
	}
	slices.SortStableFunc(groups, func(a, b handoffGroup) int { return b.Newest.asked.Compare(a.Newest.asked) })
	return groups
}

// handoffRows are the status's pending handoffs, each with the page tabs of the asking task's clients
// (the asking one and the task's other slots), read from its browser's mux; token is the viewer's form token.
func (s *Server) handoffRows(ctx context.Context, hs []api.Handoff, token string) []handoffRow {
	now := s.cfg.Now()
	rows := make([]handoffRow, 0, len(hs))
	browsers := map[string]Browser{} // by slug; nil when not running
	for _, h := range hs {
		row := handoffRow{ID: h.ID, Store: h.Store, StoreHref: storeHref(h.Store), Task: "–",
			Session: h.BUName, Reason: h.Reason, Asked: duration(now.Sub(h.CreatedAt)) + " ago", Tabs: []handoffTab{},
			Token: token, asked: h.CreatedAt}
		if h.TaskID != "" {
			row.Task, row.TaskHref = h.TaskID, taskHref(h.TaskID)
		}
		if left := h.Deadline.Sub(now); left > 0 {
			row.Left = duration(left) + " left"
		} else {
			row.Left = "time is up"
		}
		br, seen := browsers[h.Store]
		if !seen {
			br, _ = s.cfg.Source.Browser(ctx, h.Store)
			browsers[h.Store] = br
		}
		if br == nil {
			row.NoTabs = "The browser is not running: open the store page to start it."
			rows = append(rows, row)
			continue
		}
		for _, c := range br.Clients() {
			if !ofHandoff(c.ID, h) {
				continue
			}
			for _, t := range c.Tabs {
				if t.Type == "page" {
					row.Tabs = append(row.Tabs, handoffTab{Title: t.Title, URL: t.URL,
						Href: row.StoreHref + "/tab/" + url.PathEscape(t.ID)})
				}
			}
		}
		if len(row.Tabs) == 0 {
			row.NoTabs = "This session has no tabs open; the store page shows every tab of the browser."
		}
		rows = append(rows, row)
	}
	return rows
}

// ofHandoff reports whether mux client id is the asking session or another slot of the same task.
func ofHandoff(id string, h api.Handoff) bool {
	if id == h.ClientID {
		return true
	}
	return h.TaskID != "" && clientid.OwnerDir(id) == h.TaskID
}

// handleAnswer is a person's answer from the overview: the form's "status" button (done, cant_help) and
// its optional note. It goes back to the overview, which says the answer was sent.
func (s *Server) handleAnswer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	h, err := s.cfg.Source.AnswerHandoff(r.Context(), id, r.FormValue("status"), r.FormValue("note"))
	if err != nil {
		s.message(w, r, http.StatusConflict, "This answer was not sent", err.Error(),
			"Go back to the overview: it lists the handoffs still waiting for you.", "./")
		return
	}
	s.cfg.Log.Info().Str("handoff", h.ID).Str("status", h.Status).Msg("a person answered a handoff in the web UI")
	code, text := noticeDone, "Your answer reached the agent of handoff "+h.ID+": it goes on with its task."
	if h.Status == api.HandoffCantHelp {
		code, text = noticeCantHelp, "The agent of handoff "+h.ID+" now knows that you cannot help; it records the step as blocked."
	}
	s.remember(r, code, text)
	s.redirect(w, r, noticeURL(code))
}
