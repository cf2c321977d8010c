package mux

import (
	"context"
	"strings"
	"time"
)

// The task timeline (SPEC §15): the steps of each client's pages, for Hooks.Timeline. A step is queued under
// mu where it happens and passed on in order by one goroutine (runTimelineHook), woken the way the ownership
// hook is. Chrome announces a page when it navigates, with the title it has then (a stand-in made of the URL,
// before the document sets one), and never when the title changes: for titleWait after a navigation the
// titles are read (refreshTitlesLocked, every titleEvery) until the document's own comes.

// The kinds of TimelineEvent.
const (
	// TabCreated: a page became the client's (its createTarget, a popup of its page). URL is what Chrome
	// announced the page with: about:blank, or the URL it is opening.
	TabCreated = "tab_created"
	// TabNavigated: a top-level navigation of the page (a same-document one included), with the page's
	// title then if the document had one; once more with the same URL and the title when the document
	// sets one (at most once a navigation, within titleWait, or whenever Chrome says it later).
	TabNavigated = "tab_navigated"
	// TabClosed: the page closed, or the client lost it (Config.KeepLastPage keeps the last page open
	// for nobody).
	TabClosed = "tab_closed"
	// HoldTaken: a person took the page over (View.Hold); By is the holder.
	HoldTaken = "hold_taken"
	// HoldReleased: the person's hold ended; By is the holder, Why says why when they did not Release it.
	HoldReleased = "hold_released"
)

// TimelineEvent is one step of a client's page (Hooks.Timeline). A page's steps come in the order they
// happened: TabCreated first, TabClosed last, holds and navigations between.
type TimelineEvent struct {
	At     time.Time
	Client string // the owning client id (never HumanClient: a person's own tabs are not a task's)
	Tab    string // the page's target id
	Kind   string // TabCreated, TabNavigated, TabClosed, HoldTaken, HoldReleased
	// URL: see the kinds. Title: a TabNavigated's, "" until the document set one.
	URL, Title string
	// By is a hold's holder; Why says why a hold ended when its holder did not Release it.
	By, Why string
	// Host is the host the client connected from through its door (AnotherHost), "" for this host: the
	// step is that host's task's (SPEC §19).
	Host string
}

// titleWait is how long after a navigation the timeline reads titles while the document has set none.
const titleWait = 10 * time.Second

// maxTimelineQueue bounds the steps waiting for a slow hook: past it new steps are dropped and logged (the
// timeline is a record for people; it must never hold up the browser's traffic).
const maxTimelineQueue = 4096

// timelineState is the timeline's part of the Mux, guarded by Mux.mu (wake excepted).
type timelineState struct {
	queue   []TimelineEvent
	dropped int           // steps dropped since the queue was last taken
	wake    chan struct{} // capacity 1: one pending wake-up is enough, the hook's goroutine takes the whole queue
	poll    *time.Timer   // the next read of the titles, while a page waits for its title
}

// tabLine is what the timeline has told of a page, guarded by Mux.mu.
type tabLine struct {
	client string    // the client its TabCreated named ("" before one, and after its TabClosed)
	url    string    // the URL of its last TabNavigated
	title  string    // the title that navigation carried (or the one passed after it)
	titled bool      // the document's title was passed after the navigation
	until  time.Time // titles are read for it until then
	// adopted: owned before this mux ran (Config.Ownership); its first announcement sets url, silently.
	adopted bool
}

// tabStepLocked passes what changed of page t since the timeline last told of it: a TabCreated when it
// became a client's, a TabNavigated when its URL changed or its title was learnt. Call it wherever t's
// owner, URL or title may have changed.
func (tp *Taps) tabStepLocked(t *target) {
	m := tp.m
	if m.cfg.Hooks.Timeline == nil || t.typ != "page" || t.closing {
		return
	}
	l := &t.line
	if t.owner != nil && l.client != "" && t.owner.id != l.client {
		tp.tabGoneLocked(t) // passed from one client to another: the first lost it
	}
	if l.client == "" {
		if t.owner == nil || t.owner.id == HumanClient {
			return
		}
		l.client = t.owner.id
		tp.timelineLocked(TimelineEvent{Client: l.client, Tab: t.id, Kind: TabCreated, URL: t.url})
	}
	if t.owner == nil || t.url == "" {
		return // let go of (its client's grace ran out): it closes, nothing more is its client's
	}
	title := documentTitle(t.url, t.title)
	switch {
	case l.adopted:
		*l = tabLine{client: l.client, url: t.url, title: title, titled: true}
	case t.url != l.url && (l.url != "" || t.url != "about:blank"):
		*l = tabLine{client: l.client, url: t.url, title: title, until: time.Now().Add(titleWait)}
		tp.timelineLocked(TimelineEvent{Client: l.client, Tab: t.id, Kind: TabNavigated, URL: t.url, Title: title})
		tp.readTitlesLocked()
	case !l.titled && title != "" && title != l.title:
		l.title, l.titled = title, true
		tp.timelineLocked(TimelineEvent{Client: l.client, Tab: t.id, Kind: TabNavigated, URL: t.url, Title: title})
	}
}

// tabGoneLocked passes the TabClosed of a page that closed or that its client lost.
func (tp *Taps) tabGoneLocked(t *target) {
	if t.line.client == "" {
		return
	}
	tp.timelineLocked(TimelineEvent{Client: t.line.client, Tab: t.id, Kind: TabClosed, URL: t.url})
	t.line = tabLine{}
}

// holdStepLocked passes a person's hold of a client's page taken or ended.
func (tp *Taps) holdStepLocked(t *target, kind, by, why string) {
	if t.line.client == "" {
		return // a human tab, or no timeline
	}
	tp.timelineLocked(TimelineEvent{Client: t.line.client, Tab: t.id, Kind: kind, URL: t.url, By: by, Why: why})
}

// documentTitle is title unless it is Chrome's stand-in for a page whose document set none: the URL
// itself, or the URL without its scheme (and without the slash of a bare host), as Chrome 156 shows them.
func documentTitle(url, title string) string {
	rest := url
	if i := strings.Index(url, "://"); i >= 0 {
		rest = url[i+len("://"):]
	}
	if title == url || title == rest || title+"/" == rest {
		return ""
	}
	return title
}

// timelineLocked queues ev for Hooks.Timeline.
func (tp *Taps) timelineLocked(ev TimelineEvent) {
	m := tp.m
	if m.cfg.Hooks.Timeline == nil || m.closed {
		return
	}
	if len(tp.tl.queue) >= maxTimelineQueue {
		tp.tl.dropped++
		return
	}
	ev.At = time.Now()
	if cl := m.clients[ev.Client]; cl != nil {
		ev.Host = cl.host
	}
	tp.tl.queue = append(tp.tl.queue, ev)
	notify(tp.tl.wake)
}

// runTimelineHook passes the queued steps to Hooks.Timeline in order until ctx ends, and then what was
// queued by then.
func (tp *Taps) runTimelineHook(ctx context.Context) {
	m := tp.m
	hook := m.cfg.Hooks.Timeline
	if hook == nil {
		return
	}
	pass := func() {
		m.mu.Lock()
		q, dropped := tp.tl.queue, tp.tl.dropped
		tp.tl.queue, tp.tl.dropped = nil, 0
		m.mu.Unlock()
		if dropped > 0 {
			m.log.Warn().Int("dropped", dropped).Int("queued", maxTimelineQueue).Msg("timeline hook too slow: steps dropped")
		}
		for _, ev := range q {
			hook(ev)
		}
	}
	for {
		select {
		case <-ctx.Done():
			pass()
			return
		case <-tp.tl.wake:
			pass()
		}
	}
}

// readTitlesLocked schedules the next read of the titles, unless one is due.
func (tp *Taps) readTitlesLocked() {
	m := tp.m
	if tp.tl.poll == nil && !m.closed {
		tp.tl.poll = time.AfterFunc(titleEvery, tp.pollTitles)
	}
}

// pollTitles reads the titles while a page waits for its own; the answer passes each to tabStepLocked.
func (tp *Taps) pollTitles() {
	m := tp.m
	m.mu.Lock()
	defer m.mu.Unlock()
	tp.tl.poll = nil
	if m.closed {
		return
	}
	now := time.Now()
	for _, t := range m.order {
		if l := &t.line; l.client != "" && !l.titled && now.Before(l.until) {
			m.op.refreshTitlesLocked()
			tp.readTitlesLocked()
			return
		}
	}
}

// closeLocked (a feature hook) stops the reads of the titles: the mux is closing.
func (tp *Taps) closeLocked() {
	if tp.tl.poll != nil {
		tp.tl.poll.Stop()
		tp.tl.poll = nil
	}
}

// targetGoneLocked (a feature hook) notes that a tab closed.
func (tp *Taps) targetGoneLocked(t *target) { tp.tabGoneLocked(t) }
