package mux

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"
)

// cmdParams is the decoded params of a Target.* or Browser.* command: the only client traffic the mux
// decodes.
type cmdParams struct {
	TargetID               string         `json:"targetId"`
	SessionID              string         `json:"sessionId"`
	BrowserContextID       string         `json:"browserContextId"`
	Discover               bool           `json:"discover"`
	AutoAttach             bool           `json:"autoAttach"`
	WaitForDebuggerOnStart bool           `json:"waitForDebuggerOnStart"`
	Flatten                *bool          `json:"flatten"`
	Filter                 []targetFilter `json:"filter"`
	Behavior               string         `json:"behavior"`
	EventsEnabled          bool           `json:"eventsEnabled"`
}

// targetFilter is one entry of CDP's Target.TargetFilter.
type targetFilter struct {
	Type    string `json:"type"`
	Exclude bool   `json:"exclude"`
}

// defaultFilter is what Chrome assumes when a filter is omitted: everything but browser and tab.
var defaultFilter = []targetFilter{{Type: "browser", Exclude: true}, {Type: "tab", Exclude: true}, {}}

func filterMatch(f []targetFilter, typ string) bool {
	if f == nil {
		f = defaultFilter
	}
	for _, e := range f {
		if e.Type == "" || e.Type == typ {
			return !e.Exclude
		}
	}
	return false
}

// CDP error codes the mux answers with.
const (
	codeParse        = -32700
	codeInvalid      = -32600
	codeInvalidParam = -32602
	codeInternal     = -32603
	codeServer       = -32000
	codeNoSession    = -32001
)

// errorFrame builds {"id":ID,"error":{...}[,"sessionId":S]}; a nil id leaves the id out (unroutable,
// as Chrome does for a message it cannot read).
func errorFrame(id []byte, sessionID string, code int, msg string) frame {
	b := make([]byte, 0, 96+len(msg))
	b = append(b, '{')
	if id != nil {
		b = append(b, `"id":`...)
		b = append(b, id...)
		b = append(b, ',')
	}
	b = append(b, `"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendJSONString(b, msg)
	b = append(b, '}')
	b = appendSession(b, sessionID)
	b = append(b, '}')
	return wholeFrame(b)
}

// resultFrame builds {"id":ID,"result":RESULT[,"sessionId":S]}.
func resultFrame(id []byte, sessionID string, result []byte) frame {
	b := make([]byte, 0, 32+len(id)+len(result))
	b = append(b, `{"id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = appendSession(b, sessionID)
	b = append(b, '}')
	return wholeFrame(b)
}

func appendSession(b []byte, sessionID string) []byte {
	if sessionID == "" {
		return b
	}
	b = append(b, `,"sessionId":`...)
	return appendJSONString(b, sessionID)
}

func eventFrame(method string, params []byte) frame {
	b := make([]byte, 0, 32+len(method)+len(params))
	b = append(b, `{"method":"`...)
	b = append(b, method...)
	b = append(b, `","params":`...)
	b = append(b, params...)
	b = append(b, '}')
	return wholeFrame(b)
}

// handleClient routes one message from a client.
func (m *Mux) handleClient(c *conn, b []byte) {
	info, err := scanFull(b)
	if err != nil || !json.Valid(b) {
		c.send(errorFrame(looseID(b), "", codeParse, "Message must be a valid JSON object"))
		return
	}
	if !info.hasID() {
		c.send(errorFrame(nil, info.sessionID, codeInvalid, "Message must have integer 'id' property"))
		return
	}
	idTok := b[info.idStart:info.idEnd]
	if !isInteger(idTok) {
		// The id is echoed so the client can route the error; any integer is fine (the mux rewrites it).
		c.send(errorFrame(idTok, info.sessionID, codeInvalid, "Message must have integer 'id' property"))
		return
	}
	if !info.hasMethod {
		c.send(errorFrame(idTok, info.sessionID, codeInvalid, "Message must have string 'method' property"))
		return
	}
	m.mu.Lock()
	if c.closed() || c.cl.conn != c {
		m.mu.Unlock()
		return
	}
	c.cl.active = time.Now()
	m.touchActivityLocked()
	m.upQuiet = true
	m.routeLocked(c, b, info, append([]byte(nil), idTok...))
	m.upQuiet = false
	up := m.up
	m.mu.Unlock()
	if up != nil {
		up.writeNow()
	}
}

// opaqueBrowserMethods are Browser.* commands with nothing to check or rewrite: they skip the decode.
var opaqueBrowserMethods = map[string]bool{
	"Browser.getVersion":            true,
	"Browser.getBrowserCommandLine": true,
	"Browser.getHistograms":         true,
	"Browser.getHistogram":          true,
}

func (m *Mux) touchActivityLocked() { m.activity = time.Now() }

// sendLocked queues f for c. While the upstream reader routes, the push is quiet and c is collected for
// the reader's inline write; otherwise the client's writer is woken.
func (m *Mux) sendLocked(c *conn, f frame) {
	if !m.batching {
		c.send(f)
		return
	}
	if !c.q.pushQuiet(f) {
		c.overflow()
		return
	}
	m.msgsOut.Add(1)
	m.bytesOut.Add(uint64(f.size()))
	if n := len(m.kicked); n == 0 || m.kicked[n-1] != c {
		m.kicked = append(m.kicked, c)
	}
}

func (m *Mux) replyErrLocked(c *conn, id []byte, sid string, code int, msg string) {
	m.sendLocked(c, errorFrame(id, sid, code, msg))
}

func (m *Mux) routeLocked(c *conn, b []byte, info msgInfo, id []byte) {
	sid := info.sessionID
	method := info.method
	var sess *session
	if sid != "" {
		sess = m.sessions[sid]
		if sess == nil || sess.owner != c.cl {
			m.replyErrLocked(c, id, sid, codeNoSession, "Session with given id not found.")
			return
		}
		if sess.root != nil {
			m.touchTargetLocked(sess.root)
		}
	}
	kind := kindPlain
	isTarget := strings.HasPrefix(method, "Target.")
	if isTarget || strings.HasPrefix(method, "Browser.") && !opaqueBrowserMethods[method] {
		var msg struct {
			Params cmdParams `json:"params"`
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			m.replyErrLocked(c, id, sid, codeInvalidParam, "Invalid parameters: "+err.Error())
			return
		}
		p := &msg.Params
		if r, ok := refusals[method]; ok && (r.when == nil || r.when(m, c, p)) {
			m.replyErrLocked(c, id, sid, codeServer, method+" is refused by the mux: "+r.reason)
			return
		}
		if p.TargetID != "" {
			t := m.targets[p.TargetID]
			if t == nil || t.closing {
				m.replyErrLocked(c, id, sid, codeInvalidParam, "No target with given id found")
				return
			}
			if t.owner != c.cl {
				m.replyErrLocked(c, id, sid, codeInvalid, "Target owned by another client")
				return
			}
			m.touchTargetLocked(t)
		}
		if p.SessionID != "" {
			if s := m.sessions[p.SessionID]; s == nil || s.owner != c.cl {
				m.replyErrLocked(c, id, sid, codeNoSession, "Session with given id not found.")
				return
			}
		}
		if p.BrowserContextID != "" && method != "Target.disposeBrowserContext" && !c.cl.contexts[p.BrowserContextID] && !m.isDefaultContextLocked(p.BrowserContextID) {
			m.replyErrLocked(c, id, sid, codeInvalid, "Browser context owned by another client")
			return
		}
		switch method {
		case "Target.setDiscoverTargets":
			m.setDiscoverLocked(c, sess, id, p)
			return
		case "Target.setAutoAttach":
			if sid == "" {
				m.setAutoAttachLocked(c, id, p)
				return
			}
			// Session-scoped auto-attach only reaches the client's own target's children: forward it.
		case "Browser.close":
			m.closeClientTargetsLocked(c.cl)
			m.sendLocked(c, resultFrame(id, sid, []byte("{}")))
			return
		case "Browser.setDownloadBehavior":
			c.downloadEvents = p.EventsEnabled
			if m.cfg.DownloadDir != "" {
				b = m.forcedDownloadMsg(b)
				info, _ = scanFull(b)
			}
		case "Target.createTarget":
			if m.up == nil {
				break // answered below
			}
			if m.creating != nil {
				m.createQ = append(m.createQ, queuedCreate{c: c, msg: b, info: info})
				return
			}
			m.startCreateLocked(c, b, info, id)
			return
		case "Target.getTargets":
			kind = kindGetTargets
		case "Target.createBrowserContext":
			kind = kindContext
		case "Target.getBrowserContexts":
			kind = kindContexts
		}
	}
	if m.up == nil {
		m.replyErrLocked(c, id, sid, codeInternal, "Browser disconnected")
		return
	}
	m.forwardLocked(c, b, info, id, kind, nil)
}

// forwardLocked sends a client command upstream under a fresh id.
func (m *Mux) forwardLocked(c *conn, b []byte, info msgInfo, id []byte, kind pendKind, park *parked) bool {
	nid := m.newIDLocked()
	f := frame{head: b[:info.idStart], mid: strconv.AppendInt(nil, int64(nid), 10), tail: b[info.idEnd:]}
	push := m.up.q.push
	if m.upQuiet {
		push = m.up.q.pushQuiet
	}
	if !push(f) {
		m.replyErrLocked(c, id, info.sessionID, codeServer, "mux upstream queue full; retry")
		return false
	}
	m.pending[nid] = &pending{c: c, origID: id, sessionID: info.sessionID, kind: kind, park: park}
	return true
}

// newIDLocked returns the next upstream id: int32 (Chrome rejects anything else), wrapping, and never an
// id still in flight.
func (m *Mux) newIDLocked() int32 {
	for {
		if m.nextID == math.MaxInt32 {
			m.nextID = 0
		}
		m.nextID++
		if _, busy := m.pending[m.nextID]; !busy {
			return m.nextID
		}
	}
}

// sendInternalLocked sends the mux's own command; done runs under mu with the response.
func (m *Mux) sendInternalLocked(method string, params []byte, sessionID string, done func(res []byte, failed bool)) {
	if m.up == nil {
		if done != nil {
			done(nil, true)
		}
		return
	}
	nid := m.newIDLocked()
	b := make([]byte, 0, 64+len(method)+len(params))
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(nid), 10)
	b = append(b, `,"method":"`...)
	b = append(b, method...)
	b = append(b, '"')
	if params != nil {
		b = append(b, `,"params":`...)
		b = append(b, params...)
	}
	b = appendSession(b, sessionID)
	b = append(b, '}')
	m.up.q.pushForce(wholeFrame(b))
	m.pending[nid] = &pending{kind: kindInternal, internal: done}
}

func (m *Mux) startCreateLocked(c *conn, b []byte, info msgInfo, id []byte) {
	rec := &createRec{c: c, park: &parked{c: c}}
	m.creating = rec
	if !m.forwardLocked(c, b, info, id, kindCreate, rec.park) {
		m.creating = nil
		m.nextCreateLocked()
	}
}

// nextCreateLocked starts the next queued createTarget. They go one at a time so that the targets Chrome
// announces while one is pending (puppeteer's tab target has its own id) are attributed without doubt.
func (m *Mux) nextCreateLocked() {
	for m.creating == nil && len(m.createQ) > 0 {
		q := m.createQ[0]
		m.createQ[0] = queuedCreate{}
		m.createQ = m.createQ[1:]
		if q.c.closed() || q.c.cl.conn != q.c {
			continue
		}
		id := append([]byte(nil), q.msg[q.info.idStart:q.info.idEnd]...)
		if m.up == nil {
			m.replyErrLocked(q.c, id, q.info.sessionID, codeInternal, "Browser disconnected")
			continue
		}
		m.startCreateLocked(q.c, q.msg, q.info, id)
	}
}

func (m *Mux) dropQueuedCreatesLocked(c *conn) {
	kept := m.createQ[:0]
	for _, q := range m.createQ {
		if q.c != c {
			kept = append(kept, q)
		}
	}
	clear(m.createQ[len(kept):])
	m.createQ = kept
}

// release delivers a parked reply once it is ready and nothing it waits for is outstanding.
func (m *Mux) releaseLocked(p *parked) {
	if p == nil || !p.ready || p.waits > 0 || p.f.size() == 0 {
		return
	}
	f := p.f
	p.f = frame{}
	if p.c.cl.conn == p.c {
		m.sendLocked(p.c, f)
	}
}

func (m *Mux) isDefaultContextLocked(ctxID string) bool {
	// A context no client created is the default one (or a human's); targets in it are still checked by
	// target ownership.
	for _, cl := range m.clients {
		if cl.contexts[ctxID] {
			return false
		}
	}
	return true
}

// setDiscoverLocked virtualises discovery per client (browser level) or per session (chromedp sends it on
// its page session): Chrome's is browser-wide and would announce every tenant's targets.
func (m *Mux) setDiscoverLocked(c *conn, sess *session, id []byte, p *cmdParams) {
	sid := ""
	if sess != nil {
		sid = sess.id
		sess.discover, sess.discoverFilter = p.Discover, p.Filter
	} else {
		c.discover, c.discoverFilter = p.Discover, p.Filter
	}
	if p.Discover {
		for _, t := range m.order {
			if t.owner == c.cl && !t.closing && t.info != nil && filterMatch(p.Filter, t.typ) {
				m.sendLocked(c, withSession(eventFrame("Target.targetCreated", targetInfoParams(t.info)), sid))
			}
		}
	}
	m.sendLocked(c, resultFrame(id, sid, []byte("{}")))
}

// withSession puts a sessionId on an event the mux built or received without one.
func withSession(f frame, sid string) frame {
	if sid == "" {
		return f
	}
	b := append([]byte(nil), f.head[:len(f.head)-1]...)
	b = appendSession(b, sid)
	return wholeFrame(append(b, '}'))
}

// deliverTargetEventLocked sends a discovery event about t (Chrome's bytes b) to wherever its owner
// asked for discovery: the connection and any of its sessions.
func (m *Mux) deliverTargetEventLocked(t *target, b []byte) {
	if t.owner == nil || t.owner.conn == nil {
		return
	}
	c := t.owner.conn
	if c.discover && filterMatch(c.discoverFilter, t.typ) {
		m.sendLocked(c, wholeFrame(b))
	}
	for _, s := range m.sessions {
		if s.owner == t.owner && s.discover && filterMatch(s.discoverFilter, t.typ) {
			m.sendLocked(c, withSession(wholeFrame(b), s.id))
		}
	}
}

func targetInfoParams(info []byte) []byte {
	b := make([]byte, 0, len(info)+16)
	b = append(b, `{"targetInfo":`...)
	b = append(b, info...)
	return append(b, '}')
}

// setAutoAttachLocked virtualises browser-level auto-attach per client. Chrome's is per connection and
// shared by every client here: forwarding one client's setAutoAttach(false) would detach everyone's
// sessions, and its waitForDebuggerOnStart would pause other clients' and humans' tabs. The mux never asks
// Chrome to pause anything; it attaches the client to its own targets itself, before answering, as Chrome
// would.
func (m *Mux) setAutoAttachLocked(c *conn, id []byte, p *cmdParams) {
	c.autoAttach = p.AutoAttach
	c.autoFilter = p.Filter
	park := &parked{c: c, f: resultFrame(id, "", []byte("{}")), ready: true}
	if p.AutoAttach {
		for _, t := range m.order {
			if t.owner == c.cl && !t.closing && t.autoConn != c && filterMatch(p.Filter, t.typ) {
				m.autoAttachLocked(t, c, park)
			}
		}
	}
	m.releaseLocked(park)
}

// autoAttachLocked attaches c to its target t, holding park until Chrome announced the session.
func (m *Mux) autoAttachLocked(t *target, c *conn, park *parked) {
	t.autoConn = c
	if park != nil {
		park.waits++
	}
	params := append(append([]byte(`{"targetId":`), appendJSONString(nil, t.id)...), `,"flatten":true}`...)
	m.sendInternalLocked("Target.attachToTarget", params, "", func(res []byte, failed bool) {
		if failed && t.autoConn == c {
			t.autoConn = nil
		}
		if park != nil {
			park.waits--
			m.releaseLocked(park)
		}
	})
}

func (m *Mux) touchTargetLocked(t *target) {
	m.tick++
	t.used = m.tick
}

// closeTargetLocked closes t in the browser, or only disowns it when it is the browser's last page and
// KeepLastPage is set (closing it would end a Ziniao environment).
func (m *Mux) closeTargetLocked(t *target) {
	if t.closing {
		return
	}
	if m.cfg.KeepLastPage && t.typ == "page" {
		pages := 0
		for _, o := range m.targets {
			if o.typ == "page" && !o.closing {
				pages++
			}
		}
		if pages <= 1 {
			t.owner = nil
			t.autoConn = nil
			m.ownershipChangedLocked()
			return
		}
	}
	t.closing = true
	m.ownershipChangedLocked()
	params := append(append([]byte(`{"targetId":`), appendJSONString(nil, t.id)...), '}')
	m.sendInternalLocked("Target.closeTarget", params, "", nil)
}

// closeClientTargetsLocked closes every page the client owns; their tab targets go with them (closing a
// tab target directly would also take a page KeepLastPage must keep).
func (m *Mux) closeClientTargetsLocked(cl *client) {
	for _, t := range m.order {
		if t.owner == cl && t.typ == "page" && !t.closing {
			m.closeTargetLocked(t)
		}
	}
}

// dropSessionsLocked detaches every session of a client whose connection is gone or replaced: the new
// connection re-attaches, as a fresh CDP connection would.
func (m *Mux) dropSessionsLocked(cl *client) {
	for sid, s := range m.sessions {
		if s.owner != cl {
			continue
		}
		delete(m.sessions, sid)
		if s.target != nil && s.target.autoConn != nil && s.target.autoConn.cl == cl {
			s.target.autoConn = nil
		}
		params := append(append([]byte(`{"sessionId":`), appendJSONString(nil, sid)...), '}')
		m.sendInternalLocked("Target.detachFromTarget", params, "", nil)
	}
	for _, t := range m.targets {
		if t.autoConn != nil && t.autoConn.cl == cl {
			t.autoConn = nil
		}
	}
}

func (m *Mux) startGraceLocked(cl *client) {
	if cl.grace != nil {
		cl.grace.Stop()
	}
	cl.graceGen++
	gen := cl.graceGen
	cl.grace = time.AfterFunc(m.cfg.Grace, func() { m.expireClient(cl, gen) })
}

// expireClient ends a disconnected client's grace period: its tabs close and its id is forgotten.
func (m *Mux) expireClient(cl *client, gen int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || cl.conn != nil || cl.graceGen != gen || m.clients[cl.id] != cl {
		return
	}
	m.log.Info().Str("client", cl.id).Msg("client grace period over: closing its tabs")
	m.closeClientTargetsLocked(cl)
	for _, t := range m.targets {
		if t.owner == cl {
			t.owner = nil
		}
	}
	cl.grace = nil
	delete(m.clients, cl.id)
	for g, o := range m.guids {
		if o == cl {
			delete(m.guids, g)
		}
	}
	m.ownershipChangedLocked()
}

// enforceTabCapLocked closes the client's least recently used pages beyond the cap, never newest.
func (m *Mux) enforceTabCapLocked(cl *client, newest *target) {
	if m.cfg.TabCap <= 0 {
		return
	}
	for {
		var pages []*target
		for _, t := range m.order {
			if t.owner == cl && t.typ == "page" && !t.closing {
				pages = append(pages, t)
			}
		}
		if len(pages) <= m.cfg.TabCap {
			return
		}
		var lru *target
		for _, t := range pages {
			if t != newest && (lru == nil || t.used < lru.used) {
				lru = t
			}
		}
		if lru == nil {
			return
		}
		m.log.Info().Str("client", cl.id).Str("target", lru.id).Int("cap", m.cfg.TabCap).Msg("tab cap reached: closing the least recently used tab")
		m.closeTargetLocked(lru)
		if lru.owner == nil { // kept as the last page; nothing else to close
			continue
		}
	}
}

// forcedDownloadMsg rewrites Browser.setDownloadBehavior: the download path is forced, and since the
// setting is browser-wide, "deny"/"default" from one client would stop every client's downloads, so they
// become "allow". Events stay on: the mux routes them to each download's owner.
func (m *Mux) forcedDownloadMsg(b []byte) []byte {
	var msg struct {
		ID     json.RawMessage            `json:"id"`
		Method string                     `json:"method"`
		Params map[string]json.RawMessage `json:"params"`
		Sess   string                     `json:"sessionId"`
	}
	if err := json.Unmarshal(b, &msg); err != nil {
		return b
	}
	if msg.Params == nil {
		msg.Params = map[string]json.RawMessage{}
	}
	var behavior string
	json.Unmarshal(msg.Params["behavior"], &behavior)
	if behavior != "allow" && behavior != "allowAndName" {
		msg.Params["behavior"] = json.RawMessage(`"allow"`)
	}
	msg.Params["downloadPath"] = appendJSONString(nil, m.cfg.DownloadDir)
	msg.Params["eventsEnabled"] = json.RawMessage("true")
	out := make([]byte, 0, len(b)+len(m.cfg.DownloadDir))
	out = append(out, `{"id":`...)
	out = append(out, msg.ID...)
	out = append(out, `,"method":"Browser.setDownloadBehavior","params":{`...)
	first := true
	for k, v := range msg.Params {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = appendJSONString(out, k)
		out = append(out, ':')
		out = append(out, v...) // spliced as sent, never re-encoded
	}
	out = append(out, '}')
	out = appendSession(out, msg.Sess)
	return append(out, '}')
}

func (m *Mux) downloadParams() []byte {
	b := []byte(`{"behavior":"allow","downloadPath":`)
	b = appendJSONString(b, m.cfg.DownloadDir)
	return append(b, `,"eventsEnabled":true}`...)
}
