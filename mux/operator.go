package mux

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"vibebrowser/mux/cdpwire"
	"vibebrowser/mux/errdefs"
)

// The operator: the vibe-browser UI driving a Mux in process (a Go API, no WebSocket, no token). It lists
// every client's tabs, captures thumbnails, watches tabs (View) and owns human tabs. Its sessions are
// invisible to clients: they hang off one browser session of the mux's own (Target.attachToBrowserTarget),
// so Chrome announces them on that session and never on the connection's root, where a client's
// attachedToTarget would be; they are not in Mux.sessions, so no client can address them, and nothing the
// operator does touches a client's LRU, activity or tab cap.

// Errors of the operator API; those a caller may answer with are of an errdefs class. A call the browser
// answered with an error returns it as a *cdpwire.CallError.
var (
	// ErrNoTarget: the target does not exist (or is closing).
	ErrNoTarget = errdefs.NotFound("mux: no such target")
	// ErrNotPage: the operator watches, captures and drives pages only.
	ErrNotPage = errdefs.Invalid("mux: target is not a page")
	// ErrNotHumanTab: CloseHumanTab of a tab the human client does not own.
	ErrNotHumanTab = errors.New("mux: not a human tab")
	// ErrDisconnected: the browser connection is down (or went down during the call).
	ErrDisconnected = errdefs.Unavailable("mux: browser disconnected")
	// ErrTargetClosed: the watched tab closed, or the browser let go of the operator's session.
	ErrTargetClosed = errdefs.NotFound("mux: target closed")
	// ErrViewClosed: the View was closed (Close, or its context ended).
	ErrViewClosed = errors.New("mux: view closed")
)

// Operator is the operator's side of a Mux (Mux.Operator): its sessions, views, takeovers, human tabs and
// thumbnails, and the whole cookie jar. Its state is guarded by Mux.mu: the upstream reader routes the
// operator's events under that lock, in the same critical sections as the routing tables it reads (a
// target's hold, a human client's viewers).
type Operator struct {
	noHooks
	m *Mux

	browser  string                // the mux's browser session, "" until the first operator call
	waiting  []chan string         // callers waiting for browser ("" if it failed); capacity 1 each
	sessions map[string]*opSession // operator sessions on pages, by CDP session id
	views    int                   // live views, for Stats
	titling  bool                  // a read of the titles is in flight (refreshTitlesLocked)
	titlesAt time.Time             // when the last one was sent
}

// opSession is one operator session on a page target.
type opSession struct {
	id     string
	target *target
	view   *View // nil for a thumbnail's session
}

// ClientInfo is a client id and its tabs, as the operator lists them.
type ClientInfo struct {
	// ID is the client id; HumanClient for the person's tabs.
	ID string
	// Connected reports a live WebSocket (for the human client: someone is watching one of its tabs).
	Connected bool
	// LastActivity is the client's last message (or connection) time.
	LastActivity time.Time
	// Tabs are its targets in the order they appeared: pages, and the tab, iframe and worker targets that
	// belong to them (filter on Type).
	Tabs []TabInfo
}

// TabInfo is one target of a client.
type TabInfo struct {
	ID, Type, URL, Title string
	// Owner is the owning client id.
	Owner string
	// LastUsed is the last time a command of its owner used it (zero if never).
	LastUsed time.Time
	// Human reports a human tab (owned by HumanClient).
	Human bool
	// HeldBy is the holder of a person's takeover of the tab (View.Hold), "" when nobody holds it.
	HeldBy string
	// Moves is a count that moves whenever the tab's pixels can have changed: a command of its owner on it,
	// an event of its owner's sessions on it, a change Chrome announced (its URL, its title). While it stays
	// put, a picture of the tab would show what the last one showed (a page that repaints on its own timers
	// and tells nobody excepted).
	Moves uint64
}

// Clients lists every client id (connected or within its grace period, and always HumanClient) with its
// targets, sorted by id. The result is a copy; URLs are Chrome's latest announcement, titles what Chrome
// last said (a title set after the page's last navigation comes with the next call at most titleEvery
// later: see refreshTitlesLocked).
func (o *Operator) Clients() []ClientInfo {
	m := o.m
	m.mu.Lock()
	byID := map[string]*ClientInfo{HumanClient: {ID: HumanClient}}
	for id, cl := range m.clients {
		byID[id] = &ClientInfo{ID: id, Connected: cl.conn != nil || cl.viewers > 0, LastActivity: cl.active}
	}
	for _, t := range m.order {
		if t.owner == nil || t.closing {
			continue
		}
		ci := byID[t.owner.id]
		if ci == nil {
			continue
		}
		ci.Tabs = append(ci.Tabs, tabInfoLocked(t))
	}
	o.refreshTitlesLocked()
	m.mu.Unlock()
	out := make([]ClientInfo, 0, len(byID))
	for _, ci := range byID {
		out = append(out, *ci)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// ClientTabs lists client id's targets as Clients does, without the other clients and without asking
// Chrome for the titles again (Clients does that for the next lister, someone looking): for the
// timeline's shots after each call, which need only their client's pages and their moves.
func (o *Operator) ClientTabs(id string) []TabInfo {
	m := o.m
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []TabInfo
	for _, t := range m.order {
		if t.owner != nil && !t.closing && t.owner.id == id {
			out = append(out, tabInfoLocked(t))
		}
	}
	return out
}

// ClientHost is the host whose door client id's latest connection came through ("" for this host's own) and
// whether the mux knows the client at all (connected, or within its grace): another host may ask for a
// client's tabs and pictures only when the client is that host's (SPEC §19).
func (o *Operator) ClientHost(id string) (host string, known bool) {
	m := o.m
	m.mu.Lock()
	defer m.mu.Unlock()
	cl := m.clients[id]
	if cl == nil {
		return "", false
	}
	return cl.host, true
}

// tabInfoLocked is what the operator lists of target t, which a client owns.
func tabInfoLocked(t *target) TabInfo {
	ti := TabInfo{ID: t.id, Type: t.typ, URL: t.url, Title: t.title, Owner: t.owner.id, LastUsed: t.usedAt,
		Human: t.owner.id == HumanClient, Moves: t.used + t.events}
	if t.hold != nil {
		ti.HeldBy = t.hold.holder
	}
	return ti
}

// titleEvery is how often, at most, Clients reads the pages' titles from Chrome: a little under the UI's
// store page poll (500 ms), so each poll starts a read and a title is at most two polls late.
const titleEvery = 400 * time.Millisecond

// refreshTitlesLocked reads every page's title from Chrome (one Target.getTargets) when the last read is
// titleEvery old, for the next Clients. Chrome announces a target (targetInfoChanged) when it navigates,
// with the title it has at that moment (the URL, before the document sets one), and when its "attached"
// flips; never when the title changes. A page whose tab nobody attached to or left got its real title
// with the flip of a thumbnail's session; a page its owner stays attached to (browser-use's) flips nothing
// and kept its URL as a title. The read only happens while the operator lists clients (someone is looking);
// it is no client's business: its answer goes to the mux alone.
func (o *Operator) refreshTitlesLocked() {
	m := o.m
	if o.titling || m.up == nil || time.Since(o.titlesAt) < titleEvery {
		return
	}
	o.titling, o.titlesAt = true, time.Now()
	up := m.up
	m.sendInternalLocked("Target.getTargets", []byte(`{"filter":[{"type":"page"}]}`), "", func(res []byte, failed bool) {
		o.titling = false
		if failed || m.up != up {
			return
		}
		var r struct {
			TargetInfos []targetInfo `json:"targetInfos"`
		}
		if json.Unmarshal(res, &r) != nil {
			return
		}
		// Read in the stream's order: an announcement before this answer is older than it, one after it newer.
		for _, ti := range r.TargetInfos {
			if t := m.targets[ti.TargetID]; t != nil {
				t.title = ti.Title
				m.taps.tabStepLocked(t) // the title a navigation waited for (timeline.go)
			}
		}
	})
}

// opResult is the answer of an operator call.
type opResult struct {
	res []byte
	err error
}

// sendLocked sends an operator command; done runs under mu with its answer (never with a nil error
// and a missing answer). The command skips the client path entirely (no LRU, no activity).
func (o *Operator) sendLocked(method string, params any, sid string, done func(res []byte, err error)) {
	m := o.m
	var p []byte
	if params != nil {
		var err error
		if p, err = json.Marshal(params); err != nil {
			done(nil, fmt.Errorf("mux: %s params: %w", method, err))
			return
		}
	}
	if m.up == nil {
		done(nil, ErrDisconnected)
		return
	}
	m.sendInternalLocked(method, p, sid, func(res []byte, failed bool) {
		if !failed {
			done(res, nil)
			return
		}
		var e struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		}
		if res == nil || json.Unmarshal(res, &e) != nil {
			done(nil, ErrDisconnected) // failed without an answer: the connection went
			return
		}
		done(nil, &cdpwire.CallError{Method: method, Code: e.Code, Message: e.Message})
	})
}

// call sends an operator command and waits for its answer or the end of ctx.
func (o *Operator) call(ctx context.Context, method string, params any, sid string) ([]byte, error) {
	m := o.m
	ch := make(chan opResult, 1) // one answer; nobody may be left to read it
	m.mu.Lock()
	o.sendLocked(method, params, sid, func(res []byte, err error) { ch <- opResult{res, err} })
	m.mu.Unlock()
	select {
	case r := <-ch:
		return r.res, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// browserSession returns the mux's browser session, attaching it on first use (per browser connection).
func (o *Operator) browserSession(ctx context.Context) (string, error) {
	m := o.m
	ch := make(chan string, 1)
	m.mu.Lock()
	if sid := o.browser; sid != "" {
		m.mu.Unlock()
		return sid, nil
	}
	if m.up == nil {
		m.mu.Unlock()
		return "", ErrDisconnected
	}
	o.waiting = append(o.waiting, ch)
	if len(o.waiting) == 1 {
		up := m.up
		o.sendLocked("Target.attachToBrowserTarget", nil, "", func(res []byte, err error) {
			var r struct {
				SessionID string `json:"sessionId"`
			}
			if err == nil && m.up == up && json.Unmarshal(res, &r) == nil {
				o.browser = r.SessionID
			}
			for _, w := range o.waiting {
				w <- o.browser
			}
			o.waiting = nil
		})
	}
	m.mu.Unlock()
	select {
	case sid := <-ch:
		if sid == "" {
			return "", ErrDisconnected
		}
		return sid, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// pageLocked returns the page target id, or why the operator may not use it.
func (o *Operator) pageLocked(targetID string) (*target, error) {
	m := o.m
	t := m.targets[targetID]
	if t == nil || t.closing {
		return nil, fmt.Errorf("%w: %s", ErrNoTarget, targetID)
	}
	if t.typ != "page" {
		return nil, fmt.Errorf("%w: %s is a %q", ErrNotPage, targetID, t.typ)
	}
	return t, nil
}

// attach attaches an operator session to a page. A view, if given, is registered with the session
// under the same lock as the answer, so no frame and no detach can slip between them.
func (o *Operator) attach(ctx context.Context, targetID string, v *View) (*opSession, error) {
	m := o.m
	m.mu.Lock()
	_, err := o.pageLocked(targetID)
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	bsid, err := o.browserSession(ctx)
	if err != nil {
		return nil, err
	}
	type attached struct {
		s   *opSession
		err error
	}
	ch := make(chan attached, 1)
	abandoned := false // guarded by mu: the caller gave up; the callback detaches what it gets
	m.mu.Lock()
	t, err := o.pageLocked(targetID)
	if err != nil {
		m.mu.Unlock()
		return nil, err
	}
	// Before the attach: Chrome announces the flip of "attached" ahead of the attach's answer.
	t.opSeen = true
	o.sendLocked("Target.attachToTarget", map[string]any{"targetId": targetID, "flatten": true}, bsid, func(res []byte, err error) {
		var r struct {
			SessionID string `json:"sessionId"`
		}
		if err == nil && (json.Unmarshal(res, &r) != nil || r.SessionID == "") {
			err = fmt.Errorf("mux: Target.attachToTarget: no session in %s", res)
		}
		var t *target
		if err == nil {
			if t, err = o.pageLocked(targetID); err != nil || abandoned || o.browser != bsid {
				o.detachLocked(bsid, r.SessionID)
				if err == nil {
					err = ErrDisconnected
				}
			}
		}
		if err != nil {
			ch <- attached{err: err}
			return
		}
		s := &opSession{id: r.SessionID, target: t, view: v}
		if o.sessions == nil {
			o.sessions = map[string]*opSession{}
		}
		o.sessions[s.id] = s
		if v != nil {
			v.startLocked(s)
		}
		ch <- attached{s: s}
	})
	m.mu.Unlock()
	select {
	case a := <-ch:
		return a.s, a.err
	case <-ctx.Done():
		m.mu.Lock()
		abandoned = true
		m.mu.Unlock()
		select {
		case a := <-ch: // answered meanwhile: it is ours to let go
			switch {
			case a.s != nil && a.s.view != nil:
				a.s.view.Close() // counted as a viewer already
			case a.s != nil:
				o.closeSession(a.s)
			}
		default:
		}
		return nil, ctx.Err()
	}
}

// detachLocked lets go of an operator session; its remaining events are dropped as unknown.
func (o *Operator) detachLocked(bsid, sid string) {
	m := o.m
	delete(o.sessions, sid)
	if m.up != nil && bsid == o.browser {
		m.sendInternalLocked("Target.detachFromTarget", sessionParams(sid), bsid, nil)
	}
}

func (o *Operator) closeSession(s *opSession) {
	m := o.m
	m.mu.Lock()
	if o.sessions[s.id] == s {
		o.detachLocked(o.browser, s.id)
	}
	m.mu.Unlock()
}

// browserEventLocked takes the browser-level events of the operator's browser session: its own
// attachedToTarget (a browser target: no client can attach one, attachToBrowserTarget is refused to them)
// and its detach. It decodes targetInfo only for attach events, which are never hot. (The flips of
// "attached" its page sessions cause are hidden with the mux's others: attachFlipHiddenLocked.)
func (o *Operator) browserEventLocked(method, sid string, info json.RawMessage) bool {
	switch method {
	case "Target.attachedToTarget":
		var ti targetInfo
		return json.Unmarshal(info, &ti) == nil && ti.Type == "browser"
	case "Target.detachedFromTarget":
		if sid == "" || sid != o.browser {
			return false
		}
		o.browser = ""
		for _, s := range o.sessions {
			o.goneLocked(s, ErrDisconnected)
		}
		return true
	}
	return false
}

// eventLocked routes an event on a session no client owns: the operator's browser session (the
// detach of one of its page sessions) or a page session (screencast frames; everything else is dropped).
// It reports whether the event was the operator's.
func (o *Operator) eventLocked(b []byte, info cdpwire.Info) bool {
	if o.browser == "" {
		return false
	}
	if info.SessionID == o.browser {
		if info.Method == "Target.detachedFromTarget" {
			var ev upEvent
			if json.Unmarshal(b, &ev) == nil {
				if s := o.sessions[ev.Params.SessionID]; s != nil {
					o.goneLocked(s, ErrTargetClosed)
				}
			}
		}
		return true
	}
	s := o.sessions[info.SessionID]
	if s == nil {
		return false
	}
	if s.view != nil {
		s.view.eventLocked(info.Method, b)
	}
	return true
}

// goneLocked forgets a session the browser let go of.
func (o *Operator) goneLocked(s *opSession, err error) {
	delete(o.sessions, s.id)
	if s.view != nil {
		s.view.endLocked(err)
	}
}

// lostLocked (a feature hook) ends every operator session with the browser connection.
func (o *Operator) lostLocked() {
	o.browser = ""
	for _, s := range o.sessions {
		o.goneLocked(s, ErrDisconnected)
	}
}

// PageInfo asks Chrome for a page's current title and URL (Target.getTargetInfo on the operator's
// browser session) now, where Clients' title may be titleEvery older.
func (o *Operator) PageInfo(ctx context.Context, targetID string) (title, url string, err error) {
	m := o.m
	m.mu.Lock()
	_, err = o.pageLocked(targetID)
	m.mu.Unlock()
	if err != nil {
		return "", "", err
	}
	bsid, err := o.browserSession(ctx)
	if err != nil {
		return "", "", err
	}
	res, err := o.call(ctx, "Target.getTargetInfo", map[string]any{"targetId": targetID}, bsid)
	if err != nil {
		return "", "", err
	}
	var r struct {
		TargetInfo struct {
			Title string `json:"title"`
			URL   string `json:"url"`
		} `json:"targetInfo"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return "", "", fmt.Errorf("mux: Target.getTargetInfo: %w", err)
	}
	return r.TargetInfo.Title, r.TargetInfo.URL, nil
}
