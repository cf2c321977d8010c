package ui

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/mux"
)

// thumbWidth is a thumbnail's width in CSS pixels; thumbTimeout bounds one capture, so a tab that
// composites nothing (a background tab of a headful browser) costs a viewer a broken image, not a hang.
const (
	thumbWidth   = 320
	thumbTimeout = 3 * time.Second
	thumbRetry   = 200 * time.Millisecond // before the one retry of a failed capture
)

// storePage is the store page's data: its template renders the page, and the live stream the parts of
// it that changed (storeParts).
type storePage struct {
	Slug    string
	Name    string
	Backend string
	Status  string
	Running bool
	// Host is the cluster host whose browser the page shows ("" on a single host), Via the host whose UI
	// relays the page to the person (SPEC §19 "One pane"), and Away is set while Host does not answer.
	Host, Via string
	Away      bool
	Error     string // what went wrong, for a person
	// Identity is the store's network identity in words (its proxy redacted, time zone, language); "" for
	// none.
	Identity string
	// Login says how old the store's newest cookie checkpoint and snapshot are (SPEC §18), and LoginFix
	// what to run when it has no snapshot yet.
	Login, LoginFix string
	Token           string // the viewer's form token (formToken), for the page's forms
	Summary         string
	Viewers         int // live views of this browser's tabs (the mux's Stats.Viewers)
	Clients         []clientRow
	// Downloads are the browser's finished downloads per owner folder (downloads.go), shown while it
	// is stopped too.
	Downloads     []downloadGroup
	DownloadsNote string // when not every download was counted
	// DownloadsDir is the browser's folder under the home's downloads/ (the web browser's is api.WebKey).
	DownloadsDir string
}

type clientRow struct {
	ID        string
	Kind      string // task, worker, aux, manual, discovery, human
	Label     string // what the kind means here, in words
	Connected bool
	State     string // "connected" or "in grace"
	Active    string
	Tabs      []tabRow
	Task      string // the task of a task's or worker slot's client; "" for the others
	TaskHref  string // its task page
}

type tabRow struct {
	ID       string
	Title    string
	URL      string
	Href     string
	Thumb    string
	LastUsed string
	Human    bool
	Held     bool // a person has taken it over
}

// workerSlot is a task's --worker slot client id: <task>-w<N>.
var workerSlot = regexp.MustCompile(`^(.+)-w([0-9]+)$`)

// clientKind labels a mux client id by SPEC §3's naming: the task id itself, <task>-wN, aux, manual,
// human, a discovery client (connected on /json/version's URL, under a random id), or a client that named
// itself with an id no task has (/client-<id>).
func clientKind(id string, tasks map[string]bool) (kind, label string) {
	switch {
	case id == mux.HumanClient:
		return "human", "tabs people opened here"
	case id == "aux":
		return "aux", "the store's auxiliary session (--session <slug>-aux)"
	case id == "manual":
		return "manual", "browser-use without a task id"
	case tasks[id]:
		return "task", "task"
	}
	if m := workerSlot.FindStringSubmatch(id); m != nil {
		return "worker", "worker slot " + m[2] + " of task " + m[1]
	}
	if strings.HasPrefix(id, mux.DiscoveryClientPrefix) {
		return "discovery", "a client of the discovery endpoint (/json/version)"
	}
	return "named", "a client that connected as /client-" + id + " (no task has that id)"
}

// clientKindIn is clientKind on a host of a cluster too: there a client named as a task this host does not
// know is a task of another host (its agent calls from there, SPEC §19), not a stranger.
func clientKindIn(id string, tasks map[string]bool, cluster bool) (kind, label string) {
	kind, label = clientKind(id, tasks)
	if kind == "named" && cluster && api.ValidTaskID(id) {
		return "task", "task of another host of the cluster"
	}
	return kind, label
}

// browserOf finds the status row of slug's browser.
func browserOf(st api.Status, slug string) (api.Browser, api.Store, bool) {
	for _, b := range st.Browsers {
		if slug == api.WebSlug && b.Key == api.WebKey {
			return b, api.Store{Name: "Web browser", Slug: api.WebSlug, Backend: "chrome"}, true
		}
		if b.Key != api.WebKey && b.Slug == slug {
			for _, s := range st.Stores {
				if s.ID == b.Key {
					return b, s, true
				}
			}
			return b, api.Store{Name: slug, Slug: slug}, true
		}
	}
	return api.Browser{}, api.Store{}, false
}

// identityLine says how the store goes out, for its page: "through socks5://u:***@h:1080 · Asia/Tokyo · ja-JP".
// loginLine says in words how safe the store's login is (SPEC §18): its newest checkpoint's and snapshot's
// ages, and the command that makes a snapshot when it has none.
func loginLine(s api.Store, now time.Time) (line, fix string) {
	age := func(t time.Time, what string) string {
		if t.IsZero() {
			return "no " + what + " yet"
		}
		return "last " + what + " " + duration(now.Sub(t)) + " ago"
	}
	if s.Backend != "chrome" && s.Slug != api.WebSlug {
		return "Its login: " + age(s.CheckpointAt, "cookie checkpoint") + " (its profile is the " + s.Backend +
			" browser's: the manager sets back the cookies it lacks, and takes no snapshot of it).", ""
	}
	line = "Its login: " + age(s.CheckpointAt, "cookie checkpoint") + " · " + age(s.SnapshotAt, "profile snapshot") + "."
	if s.SnapshotAt.IsZero() {
		fix = "vibe-browser store snapshot " + s.Slug
	}
	return line, fix
}

func identityLine(s api.Store) string {
	var parts []string
	if s.Proxy != "" {
		via := "goes out through its proxy " + s.Proxy
		if s.ExitIP != "" {
			via += " (exit IP " + s.ExitIP + ")"
		}
		parts = append(parts, via)
	}
	if s.Timezone != "" {
		parts = append(parts, "time zone "+s.Timezone)
	}
	if s.Lang != "" {
		parts = append(parts, "language "+s.Lang)
	}
	return strings.Join(parts, " · ")
}

// storeFacts are what the store page reads of the manager's state (readStore): read again only when
// that changed, while storeView looks at the browser's clients, in memory, every pollEvery.
type storeFacts struct {
	page      storePage // what Status says: the store, its browser's status, an error
	found     bool      // the store exists
	cluster   bool      // this host is one of a cluster
	tasks     map[string]bool
	downloads []api.Download
	browser   Browser // nil while the browser is not running
}

// readStore reads the store page of slug from the source: its status and downloads (database reads).
func (s *Server) readStore(ctx context.Context, slug string) storeFacts {
	f := storeFacts{page: storePage{Slug: slug, DownloadsDir: slug}, tasks: map[string]bool{}}
	if slug == api.WebSlug {
		f.page.DownloadsDir = api.WebKey
	}
	st, err := s.cfg.Source.Status(ctx)
	if err != nil {
		f.page.Error = "The manager could not say its status: " + err.Error()
		f.found = true
		return f
	}
	b, store, found := browserOf(st, slug)
	if !found {
		return f
	}
	f.found = true
	f.page.Name, f.page.Backend, f.page.Status, f.page.Host = store.Name, store.Backend, b.Status, b.Host
	f.page.Identity = identityLine(store)
	f.page.Login, f.page.LoginFix = loginLine(store, s.cfg.Now())
	if store.ProxyError != "" {
		f.page.Error = "The store's proxy " + store.Proxy + " fails, so its pages do not load: " + store.ProxyError +
			". Check it with vibe-browser doctor, or change it: vibe-browser store set " + store.Slug + " --proxy URL."
	}
	for _, t := range st.Tasks {
		f.tasks[t.ID] = true
	}
	f.cluster = st.Host != ""
	f.downloads, err = s.cfg.Source.Downloads(ctx, slug, maxDownloads)
	if err != nil {
		f.page.Error = "The manager could not list the downloads: " + err.Error()
	}
	br, err := s.cfg.Source.Browser(ctx, slug)
	switch {
	case err == nil:
		f.browser = br
	case !errors.Is(err, ErrStopped) && f.page.Error == "":
		f.page.Error = err.Error()
	}
	return f
}

// storeView is the store page of f now: its downloads' ages, and its browser's clients and tabs as the
// mux lists them (memory only).
func (s *Server) storeView(f storeFacts) storePage {
	now := s.cfg.Now()
	page := f.page
	page.Clients, page.Downloads = []clientRow{}, downloadGroups(f.downloads, f.tasks, now)
	if len(f.downloads) == maxDownloads {
		page.DownloadsNote = "Counted among the newest " + strconv.Itoa(maxDownloads) + " downloads; " +
			"vibe-browser downloads --store " + page.Slug + " lists every one."
	}
	br := f.browser
	if br == nil {
		if page.Status != "" {
			page.Summary = "browser " + page.Status
		}
		return page
	}
	page.Running = true
	page.Viewers = br.Viewers()
	tabs := 0
	for _, c := range br.Clients() {
		kind, label := clientKindIn(c.ID, f.tasks, f.cluster)
		row := clientRow{ID: c.ID, Kind: kind, Label: label, Connected: c.Connected, State: "in grace",
			Active: "–", Tabs: []tabRow{}}
		switch kind {
		case "task":
			row.Task = c.ID
		case "worker":
			m := workerSlot.FindStringSubmatch(c.ID)
			row.Task, row.Label = m[1], "worker slot "+m[2]+" of task"
		}
		if row.Task != "" {
			row.TaskHref = taskHref(row.Task)
		}
		if c.Connected {
			row.State = "connected"
		}
		if kind == "human" && !c.Connected {
			row.State = "no one watching"
		}
		if !c.LastActivity.IsZero() {
			row.Active = duration(now.Sub(c.LastActivity)) + " ago"
		}
		for _, t := range c.Tabs {
			if t.Type != "page" {
				continue
			}
			href := tabHref(page.Slug, t.ID)
			tr := tabRow{ID: t.ID, Title: t.Title, URL: t.URL, Href: href, Thumb: href + "/thumb.jpg",
				LastUsed: "never", Human: t.Human, Held: t.HeldBy != ""}
			if !t.LastUsed.IsZero() {
				tr.LastUsed = duration(now.Sub(t.LastUsed)) + " ago"
			}
			row.Tabs = append(row.Tabs, tr)
		}
		tabs += len(row.Tabs)
		// The human client is always listed (it holds the "new human tab" form); others only when they
		// are there.
		page.Clients = append(page.Clients, row)
	}
	page.Summary = plural(len(page.Clients)-1, "agent client") + " · " + plural(tabs, "tab")
	return page
}

// forViewer is page for the viewer of r: their form token, and the banner a redirect to the page asked
// for (?error=CODE: handleStart, handleNewTab, handleCloseTab; notices.go) unless the page has its own.
func (s *Server) forViewer(page storePage, r *http.Request) storePage {
	page.Token = s.formToken(r)
	if rel, ok := relayOf(r); ok {
		page.Via = rel.host
	}
	if msg := s.noticeFor(r, errorParam); msg != "" && page.Error == "" {
		page.Error = msg
	}
	return page
}

// storeHref is the store page of slug, relative to the session's base (session.go).
func storeHref(slug string) string { return "store/" + url.PathEscape(slug) }

// tabHref is the tab page of a tab of slug's browser.
func tabHref(slug, id string) string { return storeHref(slug) + "/tab/" + url.PathEscape(id) }

func (s *Server) noStore(w http.ResponseWriter, r *http.Request) {
	// The slug is the URL's: never echoed (notices.go says why).
	s.message(w, r, http.StatusNotFound, "No such store",
		"The manager has no store with the slug this address names (it may have been deleted).",
		"Go to the overview for the stores there are; vibe-browser store list prints them too.", "./")
}

func (s *Server) handleStore(w http.ResponseWriter, r *http.Request) {
	f := s.readStore(r.Context(), r.PathValue("slug"))
	if !f.found {
		s.noStore(w, r)
		return
	}
	s.render(w, r, http.StatusOK, "store", s.forViewer(s.storeView(f), r))
}

// storeParts are the store page's live parts (templates/store.html).
var storeParts = []string{"store", "downloads-section"}

// handleStoreLive is the store page's one live channel (SSE). It reads the store's status and downloads
// only when the manager's state changed (Source.Changed), and looks at the browser's clients and tabs,
// in memory, every pollEvery.
func (s *Server) handleStoreLive(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	var f storeFacts
	s.stream(w, r, liveFeed{page: "store", parts: storeParts,
		read: func(ctx context.Context) { f = s.readStore(ctx, slug) },
		data: func() any {
			page := s.storeView(f)
			if !f.found {
				page.Error = "This store is gone: it was deleted. Go to the overview."
			}
			return s.forViewer(page, r)
		}})
}

// handleStart starts a stopped browser (the store page's button) and goes back to the page, with the
// manager's words when it could not.
func (s *Server) handleStart(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	back := storeHref(slug)
	if err := s.cfg.Source.StartBrowser(r.Context(), slug); err != nil {
		if errors.Is(err, ErrNoStore) {
			s.noStore(w, r)
			return
		}
		s.remember(r, noticeStart, "The browser did not start: "+err.Error())
		s.redirect(w, r, back+noticeURL(noticeStart))
		return
	}
	s.redirect(w, r, back)
}

// handleNewTab opens a human tab (at the form's optional URL) and goes to its tab page.
func (s *Server) handleNewTab(w http.ResponseWriter, r *http.Request) {
	slug := r.PathValue("slug")
	back := storeHref(slug)
	target, err := TabURL(r.FormValue("url"))
	if err != nil {
		s.remember(r, noticeAddress, sentence(err.Error()))
		s.redirect(w, r, back+noticeURL(noticeAddress))
		return
	}
	br, ok := s.browser(w, r, slug)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
	defer cancel()
	id, err := br.NewHumanTab(ctx, target)
	if err != nil {
		s.remember(r, noticeOpenTab, "The tab did not open: "+err.Error())
		s.redirect(w, r, back+noticeURL(noticeOpenTab))
		return
	}
	s.redirect(w, r, tabHref(slug, id))
}

// TabURL is the address a person typed for a new tab or the address bar: empty is about:blank, a bare
// host gets https://, and only http, https and about:blank are allowed (no javascript:, file: or
// chrome: pages of the shared browser).
func TabURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" || raw == "about:blank" {
		return "about:blank", nil
	}
	if !strings.Contains(raw, "://") {
		raw = "https://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("the address " + quote(raw) + " is not allowed: use an http:// or https:// address " +
			"(a bare host name gets https://), or leave it empty for a blank tab")
	}
	return u.String(), nil
}

// browser is slug's running browser, or a page saying why there is none.
func (s *Server) browser(w http.ResponseWriter, r *http.Request, slug string) (Browser, bool) {
	br, err := s.cfg.Source.Browser(r.Context(), slug)
	switch {
	case errors.Is(err, ErrNoStore):
		s.noStore(w, r)
		return nil, false
	case errors.Is(err, ErrStopped):
		s.message(w, r, http.StatusConflict, "The browser is stopped",
			"The browser of "+quote(slug)+" is not running, so it has no tabs to show.",
			"Start it from the store page (or run vibe-browser store start "+slug+").", storeHref(slug))
		return nil, false
	case err != nil:
		s.message(w, r, http.StatusServiceUnavailable, "The browser is not available", err.Error(),
			"Try again; the manager's log says more.", storeHref(slug))
		return nil, false
	}
	return br, true
}

// findTab is the page tab id of br, and its owner.
func findTab(br Browser, id string) (mux.TabInfo, bool) {
	for _, c := range br.Clients() {
		for _, t := range c.Tabs {
			if t.ID == id && t.Type == "page" {
				return t, true
			}
		}
	}
	return mux.TabInfo{}, false
}

// handleThumb captures a thumbnail of a tab: only when a page asks, so nothing is captured while no
// one looks.
func (s *Server) handleThumb(w http.ResponseWriter, r *http.Request) {
	br, err := s.cfg.Source.Browser(r.Context(), r.PathValue("slug"))
	if err != nil {
		s.plain(w, http.StatusNotFound, "no thumbnail: "+err.Error())
		return
	}
	id := r.PathValue("id")
	if _, ok := findTab(br, id); !ok {
		s.plain(w, http.StatusNotFound, "no thumbnail: the browser has no such page tab (it was closed)")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), thumbTimeout)
	defer cancel()
	jpeg, err := br.Thumbnail(ctx, id, thumbWidth, 50)
	if err != nil && ctx.Err() == nil && !errors.Is(err, mux.ErrNoTarget) && !errors.Is(err, mux.ErrNotPage) &&
		!errors.Is(err, mux.ErrTargetClosed) {
		// A capture can fail while the page swaps documents (an agent navigating it): one more try, once the
		// new document is in, gives the person a fresh picture instead of the stale one.
		select {
		case <-time.After(thumbRetry):
			jpeg, err = br.Thumbnail(ctx, id, thumbWidth, 50)
		case <-ctx.Done():
		}
	}
	switch {
	case errors.Is(err, mux.ErrNoTarget) || errors.Is(err, mux.ErrNotPage) || errors.Is(err, mux.ErrTargetClosed):
		s.plain(w, http.StatusNotFound, "no thumbnail: "+err.Error())
		return
	case err != nil:
		s.plain(w, http.StatusServiceUnavailable, "no thumbnail: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(jpeg)))
	_, _ = w.Write(jpeg)
}
