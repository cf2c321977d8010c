package mux

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"vibebrowser/mux/cdpwire"
)

// Commands from clients: checking and routing each one, forwarding it upstream under a fresh id (the
// pending table), the one-at-a-time createTarget queue, and the answers on their way back.

// handleClient routes one message from a client: read strictly, decided by the table of methods, judged,
// re-encoded where judged, then routed.
func (m *Mux) handleClient(c *conn, b []byte) {
	cmd, err := c.strict.read(b)
	if err != nil {
		id := cmd.id
		if id == nil {
			id = cdpwire.LooseID(b)
		}
		code := codeInvalid
		if se, ok := err.(*errStrict); ok && se.parse {
			code = codeParse
		}
		c.send(errorFrame(id, cmd.sessionID, code, "message refused by the mux: "+err.Error()+": "+strictRule))
		return
	}
	if cmd.id == nil {
		c.send(errorFrame(nil, cmd.sessionID, codeInvalid, "Message must have integer 'id' property"))
		return
	}
	if !cmd.hasMethod {
		c.send(errorFrame(cmd.id, cmd.sessionID, codeInvalid, "Message must have string 'method' property"))
		return
	}
	rt, known := lookupRoute(cmd.method)
	var k *call // the judged call; forwarded ones need none
	var refused, reason string
	switch {
	case !known:
		reason = unknownRule
	case rt.refuse != "":
		reason = rt.refuse
	case rt.where == onPage && cmd.sessionID == "":
		reason = pageOnlyRule
	case rt.check != nil:
		k = &call{cmd: cmd}
		if refused, err = rt.check(m, c, k); err != nil {
			c.send(errorFrame(cmd.id, cmd.sessionID, codeInvalidParam, "Invalid parameters: "+err.Error()))
			return
		}
		if refused != "" {
			reason = rt.reason
		}
	}
	if reason != "" {
		m.refusedLog.Warn().Str("client", c.cl.id).Str("method", cmd.method).Str("detail", refused).Msg("call refused")
		c.send(errorFrame(cmd.id, cmd.sessionID, codeServer, refusedMessage(cmd.method, refused, reason)))
		return
	}
	info := cdpwire.Info{IDStart: cmd.idStart, IDEnd: cmd.idEnd, Method: cmd.method, SessionID: cmd.sessionID, HasMethod: true}
	var tp *cmdParams
	if k != nil {
		b, info = encodeCommand(&k.cmd, k.ps)
		tp = k.tp
	}
	id := append([]byte(nil), cmd.id...)
	m.launch.wait()
	m.mu.Lock()
	if c.closed() || c.cl.conn != c {
		m.mu.Unlock()
		return
	}
	c.cl.active = time.Now()
	m.touchActivityLocked()
	m.taps.countJarCommand(cmd.method, cmd.sessionID)
	m.upQuiet = true
	m.routeLocked(c, b, info, id, tp)
	m.upQuiet = false
	up := m.up
	m.mu.Unlock()
	if up != nil {
		up.writeNow()
	}
}

// routeLocked routes a command the table let through; p is its Target.* or Browser.* params, as judged.
func (m *Mux) routeLocked(c *conn, b []byte, info cdpwire.Info, id []byte, p *cmdParams) {
	sid := info.SessionID
	method := info.Method
	var sess *session
	if sid != "" {
		sess = m.sessions[sid]
		if sess == nil || sess.owner != c.cl {
			m.replyErrLocked(c, id, sid, codeNoSession, "Session with given id not found.")
			return
		}
		if sessionHeld(sess) {
			m.replyErrLocked(c, id, sid, codeServer, HeldMessage)
			return
		}
		if sess.root != nil {
			m.touchTargetLocked(sess.root)
		}
	}
	if method == "Page.setDownloadBehavior" && sess != nil && m.dl.setDownloadBehaviorLocked(c, sess, true, id, b) {
		return // Chrome applies it browser-wide: the mux's own stays in force
	}
	kind := kindPlain
	switch method {
	case "Page.printToPDF", "Fetch.takeResponseBodyAsStream", "Network.takeResponseBodyForInterceptionAsStream":
		kind = kindStream // the answer's stream becomes the client's to read
	}
	if p != nil {
		if method == "Target.disposeBrowserContext" && (p.BrowserContextID == "" || !c.cl.contexts[p.BrowserContextID]) {
			r := methodRoutes[method]
			m.replyErrLocked(c, id, sid, codeServer, refusedMessage(method, "", r.reason))
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
			if targetHeld(method, t) {
				m.replyErrLocked(c, id, sid, codeServer, HeldMessage)
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
			m.at.setDiscoverLocked(c, sess, id, p)
			return
		case "Target.setAutoAttach":
			if sid == "" {
				m.at.setAutoAttachLocked(c, id, p)
				return
			}
			// Session-scoped auto-attach only reaches the client's own target's children: forward it.
		case "Browser.close":
			m.closeClientTargetsLocked(c.cl)
			m.sendLocked(c, resultFrame(id, sid, []byte("{}")))
			return
		case "Browser.setDownloadBehavior":
			if m.dl.setDownloadBehaviorLocked(c, sess, false, id, b) {
				return
			}
		case "Browser.cancelDownload":
			if !m.dl.cancelDownloadAllowedLocked(c, sid, id, b) {
				return
			}
		case "Target.createTarget":
			if m.up == nil {
				break // answered below
			}
			if m.cr.inFlight != nil {
				m.cr.queue = append(m.cr.queue, queuedCreate{c: c, msg: b, info: info})
				return
			}
			m.cr.startCreateLocked(c, b, info, id)
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
	if sent := m.forwardLocked(c, b, info, id, kind, nil); sent != nil && method == "Input.insertText" && sess != nil {
		sent.answered = make(chan struct{})
		m.taps.checkPasswordLocked(c.cl, sess, b, sent.answered) // off the command's way: it asks once Chrome answered
	}
}

func (m *Mux) replyErrLocked(c *conn, id []byte, sid string, code int, msg string) {
	m.sendLocked(c, errorFrame(id, sid, code, msg))
}

// pending is a request in flight upstream, keyed by the id the mux gave it.
type pending struct {
	c         *conn
	origID    []byte
	sessionID string
	kind      pendKind
	park      *parked
	internal  func(res []byte, failed bool) // for the mux's own requests; runs under mu
	answered  chan struct{}                 // if set, closed once Chrome answered or the command failed
}

type pendKind int

const (
	kindPlain pendKind = iota
	kindGetTargets
	kindCreate
	kindContext
	kindContexts
	kindInternal
	kindStream
)

// forwardLocked sends a client command upstream under a fresh id; it returns the command in flight, or nil
// when it could not go (the client was told).
func (m *Mux) forwardLocked(c *conn, b []byte, info cdpwire.Info, id []byte, kind pendKind, park *parked) *pending {
	nid := m.newIDLocked()
	f := frame{head: b[:info.IDStart], mid: strconv.AppendInt(nil, int64(nid), 10), tail: b[info.IDEnd:]}
	push := m.up.q.push
	if m.upQuiet {
		push = m.up.q.pushQuiet
	}
	if !push(f) {
		m.replyErrLocked(c, id, info.SessionID, codeServer, "mux upstream queue full; retry")
		return nil
	}
	p := &pending{c: c, origID: id, sessionID: info.SessionID, kind: kind, park: park}
	m.pending[nid] = p
	return p
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

// parked holds a reply until the events Chrome would have sent before it have been delivered (the
// virtual auto-attach of a new target precedes the createTarget answer, as on a direct connection).
type parked struct {
	c     *conn
	f     frame
	ready bool
	waits int
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

func (m *Mux) responseLocked(b []byte, info cdpwire.Info) {
	id64, err := strconv.ParseInt(string(b[info.IDStart:info.IDEnd]), 10, 32)
	if err != nil {
		return
	}
	p := m.pending[int32(id64)]
	if p == nil {
		return
	}
	delete(m.pending, int32(id64))
	if p.answered != nil {
		close(p.answered)
	}
	if p.kind == kindInternal {
		if p.internal != nil {
			var r struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			failed := json.Unmarshal(b, &r) != nil || r.Error != nil
			if failed {
				p.internal(r.Error, true) // the operator reports Chrome's error; others ignore it
			} else {
				p.internal(r.Result, false)
			}
		}
		return
	}
	spliced := frame{head: b[:info.IDStart], mid: p.origID, tail: b[info.IDEnd:]}
	switch p.kind {
	case kindGetTargets:
		if f, ok := m.filterTargetsLocked(p, b); ok {
			spliced = f
		}
	case kindCreate:
		var rec *createRec
		if m.cr.inFlight != nil && m.cr.inFlight.park == p.park {
			rec = m.cr.inFlight
			m.cr.inFlight = nil
		}
		var r struct {
			Result struct {
				TargetID string `json:"targetId"`
			} `json:"result"`
		}
		if json.Unmarshal(b, &r) == nil && r.Result.TargetID != "" {
			t := m.targets[r.Result.TargetID]
			if t == nil {
				t = &target{id: r.Result.TargetID, typ: "page"}
				m.addTargetLocked(t)
			}
			if rec != nil {
				m.cr.settleClaimsLocked(rec, t)
			}
			if t.owner == nil && !t.closing {
				m.ownLocked(t, p.c.cl, p.park)
			}
		} else if rec != nil {
			m.cr.abandonCreateLocked(rec)
		}
		p.park.f = spliced
		p.park.ready = true
		m.releaseLocked(p.park)
		m.cr.nextCreateLocked()
		return
	case kindStream:
		var r struct {
			Result struct {
				Stream string `json:"stream"`
			} `json:"result"`
		}
		if decodeStrict(b, &r) == nil && r.Result.Stream != "" {
			if p.c.cl.streams == nil {
				p.c.cl.streams = map[string]bool{}
			}
			p.c.cl.streams[r.Result.Stream] = true
		}
	case kindContexts:
		if f, ok := m.filterContextsLocked(p, b); ok {
			spliced = f
		}
	case kindContext:
		var r struct {
			Result struct {
				BrowserContextID string `json:"browserContextId"`
			} `json:"result"`
		}
		if json.Unmarshal(b, &r) == nil && r.Result.BrowserContextID != "" {
			p.c.cl.contexts[r.Result.BrowserContextID] = true
			m.dl.contextCreatedLocked(r.Result.BrowserContextID)
		}
	}
	if p.c.cl.conn == p.c {
		m.sendLocked(p.c, spliced)
	}
}

// filterTargetsLocked rewrites a getTargets answer to the client's own targets, splicing Chrome's bytes.
func (m *Mux) filterTargetsLocked(p *pending, b []byte) (frame, bool) {
	var r struct {
		Result struct {
			TargetInfos []json.RawMessage `json:"targetInfos"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &r) != nil || r.Result.TargetInfos == nil {
		return frame{}, false
	}
	res := append(make([]byte, 0, len(b)), `{"targetInfos":[`...)
	n := 0
	for _, raw := range r.Result.TargetInfos {
		var ti targetInfo
		if json.Unmarshal(raw, &ti) != nil {
			continue
		}
		t := m.targets[ti.TargetID]
		if t == nil || t.owner != p.c.cl || t.closing || t.held {
			continue
		}
		if n > 0 {
			res = append(res, ',')
		}
		res = append(res, m.at.ownerInfoLocked(t, raw)...)
		n++
	}
	res = append(res, "]}"...)
	return resultFrame(p.origID, p.sessionID, res), true
}

// filterContextsLocked rewrites a getBrowserContexts answer to the contexts the client created.
func (m *Mux) filterContextsLocked(p *pending, b []byte) (frame, bool) {
	var r struct {
		Result struct {
			BrowserContextIDs       []string        `json:"browserContextIds"`
			DefaultBrowserContextID json.RawMessage `json:"defaultBrowserContextId"`
		} `json:"result"`
	}
	if json.Unmarshal(b, &r) != nil {
		return frame{}, false
	}
	res := append(make([]byte, 0, 128), `{"browserContextIds":[`...)
	n := 0
	for _, id := range r.Result.BrowserContextIDs {
		if p.c.cl.contexts[id] {
			if n > 0 {
				res = append(res, ',')
			}
			res = appendJSONString(res, id)
			n++
		}
	}
	res = append(res, ']')
	if r.Result.DefaultBrowserContextID != nil {
		res = append(res, `,"defaultBrowserContextId":`...)
		res = append(res, r.Result.DefaultBrowserContextID...)
	}
	return resultFrame(p.origID, p.sessionID, append(res, '}')), true
}

func (m *Mux) failPendingLocked(p *pending, code int, msg string) {
	if p.answered != nil {
		close(p.answered)
	}
	switch {
	case p.kind == kindInternal:
		if p.internal != nil {
			p.internal(nil, true)
		}
	case p.park != nil:
		p.park.f = errorFrame(p.origID, p.sessionID, code, msg)
		p.park.ready = true
		m.releaseLocked(p.park)
	case p.c.cl.conn == p.c:
		m.sendLocked(p.c, errorFrame(p.origID, p.sessionID, code, msg))
	}
}

// upstreamOversized handles a browser message over the limit: its sender gets an error, the browser
// connection lives on.
func (m *Mux) upstreamOversized(up *upstream, prefix []byte) {
	m.log.Warn().Int("limit", m.cfg.UpstreamMessageLimit).Msg("browser message over the limit: dropped")
	info, _ := cdpwire.Scan(prefix)
	if !info.HasID() {
		return
	}
	id, err := strconv.ParseInt(string(prefix[info.IDStart:info.IDEnd]), 10, 32)
	if err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.up != up {
		return
	}
	if p := m.pending[int32(id)]; p != nil {
		delete(m.pending, int32(id))
		if p.kind == kindCreate && m.cr.inFlight != nil && m.cr.inFlight.park == p.park {
			m.cr.abandonCreateLocked(m.cr.inFlight)
			m.cr.inFlight = nil
			defer m.cr.nextCreateLocked()
		}
		m.failPendingLocked(p, codeServer, "response exceeds the mux's upstream message limit")
	}
}
