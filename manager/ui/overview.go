package ui

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"vibebrowser/manager/api"
)

// maxEvents is how many recent events the overview lists; the manager keeps more.
const maxEvents = 50

// needsPerson are the event kinds a person must act on: they are highlighted.
var needsPerson = map[string]bool{api.EventBudgetSpent: true, api.EventWedgeUnrecoverable: true}

// overview is the overview page's data: its template renders the page, and the live stream the parts
// of it that changed (overviewParts). Everything is formatted here, once.
type overview struct {
	Version   string
	Home      string
	Token     string         // the viewer's form token (formToken), for the handoffs' forms
	Error     string         // the manager could not say its status
	Stores    int            // stores, without the web browser
	Summary   string         // "2 stores · 1 browser running"
	Attention int            // listed events that need a person
	Latest    string         // the newest of them, in words
	Handoffs  []handoffRow   // pending: agents waiting for a person, first on the page
	Groups    []handoffGroup // the same, by task (handoffGroups)
	Answered  string         // the confirmation after a person's answer (handleAnswer)
	Hosts     []hostRow      // the cluster's hosts (SPEC §19), none on a single host
	HostsNote string         // "3 hosts · 1 unreachable"
	Browsers  []browserRow
	Tasks     []taskRow
	Events    []eventRow
}

type browserRow struct {
	Key        string
	Name       string
	Slug       string
	Href       string
	Backend    string
	Status     string
	PID        string
	Uptime     string
	Relaunches string
	Spent      bool // no relaunch left: the store refuses until a person starts it
	Clients    string
	Tabs       string
	Host       string // the cluster host that runs it ("" on a single host)
	Away       bool   // that host is unreachable: nothing of it is known now
}

type taskRow struct {
	ID     string
	Page   string // its task page
	Store  string
	Href   string
	Status string
	Lease  string
}

type eventRow struct {
	Time    string
	Kind    string
	Store   string
	Message string
	Agent   bool // Message holds an agent's words (api.FromAgent), said so beside it
	Alert   bool
}

// taskOrder lists the statuses that hold a browser first, then waiting, then ended ones.
var taskOrder = []string{"running", "designing", "planned", "queued", "pending", "waiting", "failed", "completed"}

// buildOverview turns the source's picture into the overview at now.
func (s *Server) buildOverview(r *http.Request) overview {
	now := s.cfg.Now()
	st, err := s.cfg.Source.Status(r.Context())
	ov := overview{Version: st.Version, Home: st.Home, Token: s.formToken(r), Browsers: []browserRow{}, Tasks: []taskRow{}, Events: []eventRow{},
		Handoffs: []handoffRow{}}
	if err != nil {
		ov.Error = "The manager could not say its status: " + err.Error()
		return ov
	}
	stores := map[string]api.Store{}
	for _, store := range st.Stores {
		stores[store.ID] = store
	}
	ov.Stores = len(st.Stores)
	var away map[string]bool
	if len(st.Hosts) > 0 {
		moves := 10 * time.Second
		if c := s.cfg.Source.Cluster(); c != nil {
			moves = c.MovesAfter()
		}
		ov.Hosts, away = hostRows(st, moves)
		ov.HostsNote = plural(len(ov.Hosts), "host")
		if len(away) > 0 {
			ov.HostsNote += " · " + strconv.Itoa(len(away)) + " unreachable"
		}
	}
	ov.Handoffs = s.handoffRows(r.Context(), st.Handoffs, ov.Token)
	ov.Groups = handoffGroups(ov.Handoffs)
	running := 0
	// slugOf names a browser key's store; events of the web browser carry no store id.
	slugOf := func(id string) string {
		if id == "" {
			return api.WebSlug
		}
		if s, ok := stores[id]; ok {
			return s.Slug
		}
		return id
	}
	for _, b := range st.Browsers {
		row := browserRow{Key: b.Key, Slug: b.Slug, Status: b.Status, PID: "–", Uptime: "–",
			Clients: strconv.Itoa(b.Clients), Tabs: strconv.Itoa(b.Tabs), Host: b.Host}
		if away[b.Host] {
			row.Status, row.Away, row.Clients, row.Tabs = "host unreachable", true, "–", "–"
		}
		if b.Held > 0 {
			row.Tabs += " · " + strconv.Itoa(b.Held) + " taken over"
		}
		if b.Key == api.WebKey {
			row.Name, row.Slug, row.Backend, row.Href = "Web browser", api.WebSlug, "chrome", storeHref(api.WebSlug)
		} else {
			store := stores[b.Key]
			row.Name, row.Backend, row.Href = store.Name, store.Backend, storeHref(b.Slug)
		}
		if b.Status == api.StatusRunning {
			running++
			row.PID = strconv.Itoa(b.PID)
			if !b.StartedAt.IsZero() {
				row.Uptime = duration(now.Sub(b.StartedAt))
			}
		}
		switch {
		case row.Away:
			row.Relaunches = "–"
		case b.RelaunchMax <= 0:
			row.Relaunches = "no limit"
		case b.RelaunchesLeft <= 0:
			row.Relaunches, row.Spent = "spent", true
		default:
			row.Relaunches = fmt.Sprintf("%d of %d", b.RelaunchesLeft, b.RelaunchMax)
		}
		ov.Browsers = append(ov.Browsers, row)
	}
	ov.Summary = plural(ov.Stores, "store") + " · " + plural(running, "browser") + " running"
	for _, t := range st.Tasks {
		// A task without a store is a web-browser task or one reported without --store: no store to name.
		row := taskRow{ID: t.ID, Page: taskHref(t.ID), Store: "–", Status: t.Status, Lease: "–"}
		if t.Store != "" {
			row.Store = slugOf(t.Store)
			row.Href = storeHref(row.Store)
		}
		if !t.LeaseUntil.IsZero() && !slices.Contains([]string{"completed", "failed"}, t.Status) {
			if left := t.LeaseUntil.Sub(now); left > 0 {
				row.Lease = duration(left) + " left"
			} else {
				row.Lease = "expired"
			}
		}
		ov.Tasks = append(ov.Tasks, row)
	}
	slices.SortStableFunc(ov.Tasks, func(a, b taskRow) int {
		if d := rank(a.Status) - rank(b.Status); d != 0 {
			return d
		}
		if a.ID < b.ID {
			return -1
		}
		return 1
	})
	events := s.cfg.Source.Events()
	for i := len(events) - 1; i >= 0 && len(ov.Events) < maxEvents; i-- {
		ev := events[i]
		row := eventRow{Time: ev.At.Local().Format("Jan 2 15:04:05"), Kind: ev.Kind, Store: slugOf(ev.StoreID),
			Message: ev.Message, Agent: ev.From == api.FromAgent, Alert: needsPerson[ev.Kind]}
		if row.Alert {
			if ov.Attention == 0 {
				ov.Latest = row.Kind + " on " + row.Store + " at " + row.Time
			}
			ov.Attention++
		}
		ov.Events = append(ov.Events, row)
	}
	return ov
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

func rank(status string) int {
	if i := slices.Index(taskOrder, status); i >= 0 {
		return i
	}
	return len(taskOrder)
}

// duration is a calm, coarse age: seconds only in the first minute, so a live page does not redraw
// every second for long.
func duration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(max(d, 0).Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

func (s *Server) handleOverview(w http.ResponseWriter, r *http.Request) {
	ov := s.buildOverview(r)
	ov.Answered = s.noticeFor(r, answeredParam)
	s.render(w, r, http.StatusOK, "overview", ov)
}

// overviewParts are the overview's live parts (templates/overview.html, and the title of layout.html).
var overviewParts = []string{"doc-title", "error", "handoffs-section", "attention", "hosts-section",
	"browsers-section", "tasks-section", "events-section"}

// handleOverviewLive is the overview's one live channel (SSE). The overview reads the manager's whole
// status every pollEvery (its browsers' rows count the muxes' clients and tabs, which change in memory
// only), and at once when the state changed.
func (s *Server) handleOverviewLive(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, liveFeed{page: "overview", parts: overviewParts, data: func() any { return s.buildOverview(r) }})
}
