package mux

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"vibebrowser/mux/clientid"
	"vibebrowser/mux/downloads"
)

// Downloads, per owner (SPEC §12). Chrome's download behaviour is browser-wide, so the mux owns it: every
// connection sets allowAndName into Config.DownloadDir/.incoming with events on, and each client's own
// setDownloadBehavior is only recorded for that client and answered {}. A download belongs to the owner of
// the frame that started it; when it completes the file is moved to DownloadDir/<owner dir>/<name>, and a
// client that asked for a path of its own finds it there too, before it hears "completed".

// downloads.Download behaviours a client may ask for (Browser.setDownloadBehavior's "behavior").
const (
	behaviorDefault      = "default"
	behaviorAllow        = "allow"
	behaviorAllowAndName = "allowAndName"
	behaviorDeny         = "deny"
)

// dlBehavior is one client connection's own setDownloadBehavior for one browser context.
type dlBehavior struct {
	behavior string // one of the behavior constants
	path     string // its downloadPath, "" for none
	events   bool   // eventsEnabled
}

// downloadTracker is the downloads feature of a Mux: the browser-wide download behaviour, the clients' own, and
// the downloads in progress. Its state is guarded by Mux.mu: the core hands it the download events and
// commands it routes, under that lock.
type downloadTracker struct {
	noHooks
	m *Mux

	active map[string]*download // guid -> a download not yet completed or canceled
}

// download is one download in progress.
type download struct {
	guid, url, name, frame string
	context                string     // the browser context of the frame's target, "" when unknown
	owner                  *client    // nil: unattributed
	host                   string     // the owner's host when it was attributed (client.host)
	behavior               dlBehavior // the owner's own behaviour when the download began
	resolving              bool       // the owner of a subframe is being looked up; events wait
	began                  []byte     // the downloadWillBegin held while resolving
	progress               []byte     // the latest inProgress held while resolving
	terminal               []byte     // the completed or canceled held while resolving
	received               int64      // the bytes it has, by its latest progress
	cut                    bool       // cancelled for its owner's room (Hooks.DownloadRoom)
}

// frameLookupTimeout bounds the search for the page that holds a download's subframe.
const frameLookupTimeout = 10 * time.Second

// maxFrameLookups bounds the pages searched for a subframe (most recently used first).
const maxFrameLookups = 32

// incomingDir is where Chrome writes: DownloadDir/.incoming.
func (ds *downloadTracker) incomingDir() string {
	return filepath.Join(ds.m.cfg.DownloadDir, downloads.IncomingDir)
}

// behaviorParams is the mux's own setDownloadBehavior for browserContextID ("" the default context).
func (ds *downloadTracker) behaviorParams(browserContextID string) []byte {
	b := []byte(`{"behavior":"allowAndName","downloadPath":`)
	b = appendJSONString(b, ds.incomingDir())
	b = append(b, `,"eventsEnabled":true`...)
	if browserContextID != "" {
		b = append(b, `,"browserContextId":`...)
		b = appendJSONString(b, browserContextID)
	}
	return append(b, '}')
}

// connectedLocked (a feature hook) sets the browser-wide download behaviour on a new browser connection: Chrome
// forgets a connection's setting when it closes, so every connect and reconnect sets it again, for the
// default context and every context a client created.
func (ds *downloadTracker) connectedLocked() {
	m := ds.m
	if m.cfg.DownloadDir == "" {
		return
	}
	if err := ds.incomingFolder(); err != nil {
		m.log.Error().Err(err).Str("dir", ds.incomingDir()).Msg("downloads: cannot create the incoming folder")
	}
	m.sendInternalLocked("Browser.setDownloadBehavior", ds.behaviorParams(""), "", nil)
	for _, cl := range m.clients {
		for ctxID := range cl.contexts {
			m.sendInternalLocked("Browser.setDownloadBehavior", ds.behaviorParams(ctxID), "", nil)
		}
	}
}

// contextCreatedLocked sets the mux's download behaviour on a context a client just created
// (Chrome's setting without browserContextId covers the default context only).
func (ds *downloadTracker) contextCreatedLocked(browserContextID string) {
	m := ds.m
	if m.cfg.DownloadDir != "" {
		m.sendInternalLocked("Browser.setDownloadBehavior", ds.behaviorParams(browserContextID), "", nil)
	}
}

// setDownloadBehaviorLocked records a client's Browser.setDownloadBehavior (or a session's deprecated
// Page.setDownloadBehavior, which Chrome also applies browser-wide) and answers {}: nothing is forwarded.
// Without a DownloadDir the mux owns no downloads: the command is only recorded (for the client's events)
// and answered false, for the caller to forward it.
// sess is the session it came on (nil for the root); pageScoped marks Page.setDownloadBehavior, which applies
// to the session's page's context.
func (ds *downloadTracker) setDownloadBehaviorLocked(c *conn, sess *session, pageScoped bool, id []byte, b []byte) (answered bool) {
	m := ds.m
	var msg struct {
		Params struct {
			Behavior         string `json:"behavior"`
			DownloadPath     string `json:"downloadPath"`
			EventsEnabled    bool   `json:"eventsEnabled"`
			BrowserContextID string `json:"browserContextId"`
		} `json:"params"`
	}
	sid := ""
	if sess != nil {
		sid = sess.id
	}
	if err := decodeStrict(b, &msg); err != nil {
		m.replyErrLocked(c, id, sid, codeInvalidParam, "Invalid parameters: "+err.Error())
		return true
	}
	p := msg.Params
	switch p.Behavior {
	case behaviorDefault, behaviorAllow, behaviorAllowAndName, behaviorDeny:
	default:
		m.replyErrLocked(c, id, sid, codeInvalidParam, "Invalid parameters: behavior must be one of deny, allow, allowAndName, default")
		return true
	}
	if (p.Behavior == behaviorAllow || p.Behavior == behaviorAllowAndName) && p.DownloadPath != "" && !filepath.IsAbs(p.DownloadPath) {
		m.replyErrLocked(c, id, sid, codeInvalidParam, "Invalid parameters: downloadPath must be an absolute path")
		return true
	}
	key := p.BrowserContextID
	if pageScoped && sess.root != nil {
		key = sess.root.context
	}
	if c.downloads == nil {
		c.downloads = map[string]dlBehavior{}
	}
	c.downloads[key] = dlBehavior{behavior: p.Behavior, path: p.DownloadPath, events: p.EventsEnabled}
	if m.cfg.DownloadDir == "" {
		return false
	}
	m.sendLocked(c, resultFrame(id, sid, []byte("{}")))
	return true
}

// cancelDownloadAllowedLocked lets a client cancel only its own downloads (playwright's download.cancel());
// another guid is answered with an error, as Chrome answers a guid it does not know, and nothing is sent.
func (ds *downloadTracker) cancelDownloadAllowedLocked(c *conn, sid string, id, b []byte) bool {
	m := ds.m
	if m.cfg.DownloadDir == "" {
		return true
	}
	var msg struct {
		Params struct {
			GUID string `json:"guid"`
		} `json:"params"`
	}
	decodeStrict(b, &msg)
	if d := ds.active[msg.Params.GUID]; d != nil && d.owner == c.cl {
		return true
	}
	m.replyErrLocked(c, id, sid, codeInvalidParam, "No download item found for the given GUID among this client's downloads")
	return false
}

// behaviorLocked is c's own behaviour for a download in browser context ctxID: the one it set for that
// context, else (in the default context or one no client created) the one it set without a context.
func (ds *downloadTracker) behaviorLocked(c *conn, ctxID string) dlBehavior {
	m := ds.m
	if c == nil {
		return dlBehavior{behavior: behaviorDefault}
	}
	if b, ok := c.downloads[ctxID]; ok && ctxID != "" {
		return b
	}
	if ctxID == "" || m.isDefaultContextLocked(ctxID) {
		if b, ok := c.downloads[""]; ok {
			return b
		}
	}
	return dlBehavior{behavior: behaviorDefault}
}

// dlEvent is the decoded params of Browser.downloadWillBegin and Browser.downloadProgress.
type dlEvent struct {
	Params struct {
		FrameID           string  `json:"frameId"`
		GUID              string  `json:"guid"`
		URL               string  `json:"url"`
		SuggestedFilename string  `json:"suggestedFilename"`
		TotalBytes        float64 `json:"totalBytes"`
		ReceivedBytes     float64 `json:"receivedBytes"`
		State             string  `json:"state"`
	} `json:"params"`
}

// willBeginLocked attributes a new download to the owner of its frame's target: a page, a popup
// (owned through its opener) or an OOPIF. A frame that is no target (a same-process subframe) is looked for
// in the frame trees of the clients' pages; meanwhile its events wait.
func (ds *downloadTracker) willBeginLocked(b []byte) {
	m := ds.m
	var ev dlEvent
	if json.Unmarshal(b, &ev) != nil || ev.Params.GUID == "" {
		return
	}
	p := ev.Params
	d := &download{guid: p.GUID, url: p.URL, name: p.SuggestedFilename, frame: p.FrameID}
	if ds.active == nil {
		ds.active = map[string]*download{}
	}
	ds.active[d.guid] = d
	t := m.targets[p.FrameID]
	if t != nil {
		d.context = t.context
	}
	switch {
	case t != nil && t.owner != nil && !t.closing:
		ds.attributeDownloadLocked(d, t.owner)
		ds.eventLocked(d, b)
	case t != nil && t.typ == "page" || m.cfg.DownloadDir == "":
		ds.attributeDownloadLocked(d, nil) // a tab nobody here created
	default:
		d.resolving, d.began = true, b
		ds.lookUpFrameLocked(d)
	}
}

// attributeDownloadLocked gives d to owner (nil: unattributed) and applies the owner's own behaviour:
// deny cancels the download, for that client only (the browser-wide behaviour stays allowAndName).
func (ds *downloadTracker) attributeDownloadLocked(d *download, owner *client) {
	m := ds.m
	d.owner = owner
	if owner == nil && m.cfg.DownloadDir == "" {
		return // the mux files nothing: Chrome and the clients deal with it
	}
	if owner == nil {
		m.log.Warn().Str("guid", d.guid).Str("url", d.url).Str("frame", d.frame).
			Msg("download started by a frame no client owns: it goes to " + downloads.UnattributedDir)
		return
	}
	d.host = owner.host
	d.behavior = ds.behaviorLocked(owner.conn, d.context)
	if d.behavior.behavior == behaviorDeny && m.cfg.DownloadDir != "" {
		ds.cancelLocked(d)
	}
}

// cancelLocked asks Chrome to cancel d; its "canceled" then removes the partial file and tells the owner.
func (ds *downloadTracker) cancelLocked(d *download) {
	m := ds.m
	p := append([]byte(`{"guid":`), appendJSONString(nil, d.guid)...)
	if d.context != "" && !m.isDefaultContextLocked(d.context) {
		p = append(append(p, `,"browserContextId":`...), appendJSONString(nil, d.context)...)
	}
	m.sendInternalLocked("Browser.cancelDownload", append(p, '}'), "", nil)
}

// overRoomLocked reports whether d, now at received bytes, takes its owner's downloads in progress past
// the owner's room (Hooks.DownloadRoom); if so it cancels d (unless it is complete: then it is only not
// filed) and tells Hooks.DownloadCut.
func (ds *downloadTracker) overRoomLocked(d *download, received int64, complete bool) bool {
	m := ds.m
	room := m.cfg.Hooks.DownloadRoom
	if d.cut || room == nil || d.owner == nil || m.cfg.DownloadDir == "" {
		return d.cut
	}
	d.received = max(d.received, received)
	dir := clientid.OwnerDir(d.owner.id)
	left := room(dir)
	if left < 0 {
		return false
	}
	taking := d.received
	for _, o := range ds.active {
		if o != d && o.owner != nil && !o.cut && clientid.OwnerDir(o.owner.id) == dir {
			taking += o.received
		}
	}
	if taking <= left {
		return false
	}
	d.cut = true
	if !complete {
		ds.cancelLocked(d)
	}
	m.log.Warn().Str("guid", d.guid).Str("client", d.owner.id).Int64("bytes", d.received).Int64("room", left).
		Msg("downloads: cancelled a download past its owner's room")
	if cut := m.cfg.Hooks.DownloadCut; cut != nil && !m.closed {
		dl := downloads.Download{GUID: d.guid, ClientID: d.owner.id, OwnerDir: dir, URL: d.url, Name: downloads.SanitizeName(d.name),
			Size: d.received, At: time.Now(), Host: d.host}
		m.wg.Add(1) // under mu and before closed is set: Serve's Wait covers it
		go func() { defer m.wg.Done(); cut(dl) }()
	}
	return true
}

// eventLocked sends a download event to its owner, if the owner asked for download events.
func (ds *downloadTracker) eventLocked(d *download, b []byte) {
	m := ds.m
	if d.owner == nil || d.owner.conn == nil {
		return
	}
	if ds.behaviorLocked(d.owner.conn, d.context).events {
		m.sendLocked(d.owner.conn, wholeFrame(b))
	}
}

// progressEventLocked follows a download: progress goes to its owner; canceled removes the partial
// file; completed hands the download to a goroutine that files it and only then tells the owner.
func (ds *downloadTracker) progressEventLocked(b []byte) {
	m := ds.m
	var ev dlEvent
	if json.Unmarshal(b, &ev) != nil || ev.Params.GUID == "" {
		return
	}
	d := ds.active[ev.Params.GUID]
	if d == nil {
		if ev.Params.State != "completed" || m.cfg.DownloadDir == "" {
			return
		}
		// Begun before this connection (an adopted browser, a reconnect): nobody can be told it is theirs.
		d = &download{guid: ev.Params.GUID, name: ev.Params.GUID}
		m.log.Warn().Str("guid", d.guid).Msg("a download the mux never saw begin completed: it goes to " + downloads.UnattributedDir)
	}
	if d.resolving {
		if ev.Params.State == "inProgress" {
			d.progress = b
		} else {
			d.terminal = b
		}
		return
	}
	ds.progressLocked(d, ev, b)
}

func (ds *downloadTracker) progressLocked(d *download, ev dlEvent, b []byte) {
	m := ds.m
	switch ev.Params.State {
	case "completed":
		if m.cfg.DownloadDir == "" { // nothing to file: Chrome put it where the client asked
			delete(ds.active, d.guid)
			ds.eventLocked(d, b)
			return
		}
		over := ds.overRoomLocked(d, int64(max(ev.Params.ReceivedBytes, ev.Params.TotalBytes)), true)
		delete(ds.active, d.guid)
		if d.behavior.behavior == behaviorDeny || over {
			// It completed before the cancel arrived (its subframe was still being looked up, or it was
			// past its owner's room at its first progress): the client still gets none.
			ds.removeIncomingLocked(d.guid)
			ds.eventLocked(d, canceledEvent(d.guid))
			return
		}
		if m.closed {
			return
		}
		m.wg.Add(1) // under mu and before closed is set: Serve's Wait covers it
		go func() { defer m.wg.Done(); ds.finish(d, ev) }()
	case "canceled":
		delete(ds.active, d.guid)
		if m.cfg.DownloadDir == "" {
			ds.eventLocked(d, b)
			return
		}
		ds.removeIncomingLocked(d.guid)
		ds.eventLocked(d, b)
	default:
		ds.overRoomLocked(d, int64(ev.Params.ReceivedBytes), false)
		ds.eventLocked(d, b)
	}
}

// removeIncomingLocked removes what Chrome wrote of download guid (a partial or a finished file).
func (ds *downloadTracker) removeIncomingLocked(guid string) {
	m := ds.m
	base := filepath.Join(ds.incomingDir(), guid)
	for _, p := range []string{base, base + ".crdownload"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.log.Warn().Err(err).Str("file", p).Msg("downloads: cannot remove a download's incoming file")
		}
	}
}

// lookUpFrameLocked starts the search for the page whose frame tree holds d's frame, through operator
// sessions (invisible to every client), most recently used pages first.
func (ds *downloadTracker) lookUpFrameLocked(d *download) {
	m := ds.m
	var agents, people []*target // a person's tabs last: an agent's subframe is the likelier
	for _, t := range m.order {
		switch {
		case t.owner == nil || t.typ != "page" || t.closing:
		case t.owner.id == HumanClient:
			people = append(people, t)
		default:
			agents = append(agents, t)
		}
	}
	sortByUse(agents)
	sortByUse(people)
	pages := append(agents, people...)
	ids := make([]string, 0, min(len(pages), maxFrameLookups))
	for _, t := range pages[:min(len(pages), maxFrameLookups)] {
		ids = append(ids, t.id)
	}
	if m.closed {
		return
	}
	m.wg.Add(1)
	go func() { defer m.wg.Done(); ds.resolveFrame(d, ids) }()
}

// sortByUse orders pages most recently used first (a stable insertion sort: the list is short).
func sortByUse(ts []*target) {
	for i := 1; i < len(ts); i++ {
		for j := i; j > 0 && ts[j].used > ts[j-1].used; j-- {
			ts[j], ts[j-1] = ts[j-1], ts[j]
		}
	}
}

// resolveFrame finds the page holding d's frame and delivers what waited: the owner's events, and the
// completion or cancellation if it came meanwhile.
func (ds *downloadTracker) resolveFrame(d *download, pages []string) {
	m := ds.m
	ctx, cancel := context.WithTimeout(context.Background(), frameLookupTimeout)
	defer cancel()
	found := ""
	for _, id := range pages {
		if ds.frameInPage(ctx, id, d.frame) {
			found = id
			break
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var owner *client
	if t := m.targets[found]; found != "" && t != nil && t.owner != nil {
		owner = t.owner
		if d.context == "" {
			d.context = t.context
		}
	}
	d.resolving = false
	ds.attributeDownloadLocked(d, owner)
	if d.began != nil {
		ds.eventLocked(d, d.began)
	}
	if d.progress != nil {
		ds.eventLocked(d, d.progress)
	}
	if d.terminal != nil {
		var ev dlEvent
		if json.Unmarshal(d.terminal, &ev) == nil {
			ds.progressLocked(d, ev, d.terminal)
		}
	}
	d.began, d.progress, d.terminal = nil, nil, nil
}

// frameInPage reports whether page's frame tree holds frameID.
func (ds *downloadTracker) frameInPage(ctx context.Context, page, frameID string) bool {
	m := ds.m
	s, err := m.op.attach(ctx, page, nil)
	if err != nil {
		return false
	}
	defer m.op.closeSession(s)
	res, err := m.op.call(ctx, "Page.getFrameTree", nil, s.id)
	if err != nil {
		return false
	}
	var r struct {
		FrameTree frameTree `json:"frameTree"`
	}
	return json.Unmarshal(res, &r) == nil && r.FrameTree.has(frameID)
}

type frameTree struct {
	Frame struct {
		ID string `json:"id"`
	} `json:"frame"`
	ChildFrames []frameTree `json:"childFrames"`
}

func (f *frameTree) has(id string) bool {
	if f.Frame.ID == id {
		return true
	}
	for i := range f.ChildFrames {
		if f.ChildFrames[i].has(id) {
			return true
		}
	}
	return false
}
