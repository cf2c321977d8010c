package mux

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// upstream is one browser connection: the read loop runs in runUpstream. Writes to the socket are
// serialised by wmu: the client reader that just queued a command writes the queue itself when no write
// is in progress (it saves a goroutine hand-off per call on the hot path), and the writer goroutine
// drains whatever queued behind a write in progress. Either way one goroutine writes at a time.
type upstream struct {
	nc      net.Conn
	br      *bufio.Reader // the read side, owned by the upstream reader
	q       *sendQueue
	once    sync.Once
	timeout time.Duration
	reads   atomic.Uint64 // messages read, for the liveness probe

	wmu sync.Mutex
	// wmu guards the fields below and the socket's write side.
	bw     *bufio.Writer
	batch  []frame
	failed bool
	wd     lazyDeadline
}

func (u *upstream) close() {
	u.once.Do(func() {
		u.q.close()
		u.nc.Close()
	})
}

// writeNow writes what is queued unless a write is already in progress, in which case the writer
// goroutine is woken to write it after.
func (u *upstream) writeNow() {
	if !u.wmu.TryLock() {
		u.q.signal()
		return
	}
	u.drainLocked()
	u.wmu.Unlock()
}

func (u *upstream) drainLocked() {
	if u.failed {
		return
	}
	u.batch = u.q.take(u.batch)
	if len(u.batch) == 0 {
		return
	}
	u.wd.extend(u.nc.SetWriteDeadline, time.Now(), u.timeout)
	for i := range u.batch {
		if err := writeFrame(u.bw, u.batch[i], true); err != nil {
			u.failed = true
			break
		}
	}
	clear(u.batch)
	if u.failed || u.bw.Flush() != nil {
		u.failed = true
		u.close()
	}
}

func (u *upstream) writeLoop() {
	for range u.q.wake {
		u.wmu.Lock()
		u.drainLocked()
		failed := u.failed
		u.wmu.Unlock()
		u.q.mu.Lock()
		closed := u.q.closed
		u.q.mu.Unlock()
		if closed || failed {
			return
		}
	}
}

// runUpstream keeps the browser connection up until ctx ends: reconnect with backoff, then the relaunch
// hook, and again, for as long as the mux runs (clients keep their tabs meanwhile). An endpoint handed to
// Relaunched is dialled at once, whatever the backoff.
func (m *Mux) runUpstream(ctx context.Context) {
	endpoint := m.cfg.Upstream
	delay := m.cfg.ReconnectMin
	tries := 0
	for ctx.Err() == nil {
		select {
		case endpoint = <-m.relaunched:
			tries, delay = 0, m.cfg.ReconnectMin
		default:
		}
		up, version, err := m.dial(ctx, endpoint)
		if err == nil {
			tries, delay = 0, m.cfg.ReconnectMin
			m.runConnection(up, version)
			continue
		}
		tries++
		m.log.Warn().Err(err).Int("try", tries).Msg("browser connection failed")
		if tries >= m.cfg.ReconnectTries {
			tries = 0
			if m.cfg.Hooks.Relaunch != nil {
				m.log.Error().Msg("browser unreachable after every reconnect attempt: relaunching it")
				ep, err := m.cfg.Hooks.Relaunch(ctx)
				if err == nil {
					m.markRelaunched()
					endpoint, delay = ep, m.cfg.ReconnectMin
					continue
				}
				m.log.Error().Err(err).Msg("browser relaunch failed")
			}
		}
		select {
		case <-ctx.Done():
			return
		case ep := <-m.relaunched:
			endpoint, tries, delay = ep, 0, m.cfg.ReconnectMin
			continue
		case <-time.After(delay):
		}
		delay = min(delay*2, m.cfg.ReconnectMax)
	}
}

// Relaunched points the mux at a browser that replaced the one it served (the manager relaunched it on the
// same profile after a crash). The mux drops what is left of the old connection and dials endpoint at
// once; clients keep their connections, pages the browser restores go back to the owners of the pages
// that had their URLs, and, as after any fresh launch, restored pages nobody reclaims are closed.
func (m *Mux) Relaunched(endpoint string) {
	m.mu.Lock()
	m.fresh = true
	old := m.up // taken before the send, so that a connection to endpoint is never the one closed
	m.mu.Unlock()
	for sent := false; !sent; {
		select {
		case m.relaunched <- endpoint:
			sent = true
		default:
			select { // a newer endpoint replaces one not yet dialled
			case <-m.relaunched:
			default:
			}
		}
	}
	if old != nil {
		old.close()
	}
}

// markRelaunched makes the next ownership rebuild treat the browser as freshly launched.
func (m *Mux) markRelaunched() {
	m.mu.Lock()
	m.fresh = true
	m.mu.Unlock()
}

// dial connects to endpoint; for an http endpoint it reads /json/version first (also the cached answer of
// the mux's own /json/version).
func (m *Mux) dial(ctx context.Context, endpoint string) (*upstream, map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	wsURL := endpoint
	var version map[string]any
	if strings.HasPrefix(endpoint, "http") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/json/version", nil)
		if err != nil {
			return nil, nil, fmt.Errorf("browser version request: %w", err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, nil, fmt.Errorf("browser version: %w", err)
		}
		err = json.NewDecoder(resp.Body).Decode(&version)
		resp.Body.Close()
		if err != nil {
			return nil, nil, fmt.Errorf("browser version: %w", err)
		}
		u, _ := version["webSocketDebuggerUrl"].(string)
		if u == "" {
			return nil, nil, fmt.Errorf("browser version: no webSocketDebuggerUrl")
		}
		wsURL = u
	}
	nc, br, err := dialWebSocket(ctx, wsURL)
	if err != nil {
		return nil, nil, fmt.Errorf("browser websocket: %w", err)
	}
	up := &upstream{nc: nc, br: br, q: newSendQueue(max(4*m.cfg.QueueBytes, m.cfg.ClientMessageLimit)), timeout: m.cfg.WriteTimeout,
		bw: bufio.NewWriterSize(nc, 64<<10)}
	return up, version, nil
}

// runConnection serves one upstream connection until it is lost.
func (m *Mux) runConnection(up *upstream, version map[string]any) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		up.close()
		return
	}
	m.up = up
	if version != nil {
		m.version = version
	}
	for _, t := range m.targets {
		t.seen = false
	}
	// Discovery of everything (tabs included) tells the mux every target and its opener; Chrome replays
	// the existing ones as targetCreated before answering.
	m.sendInternalLocked("Target.setDiscoverTargets", []byte(`{"discover":true,"filter":[{}]}`), "", nil)
	if m.cfg.DownloadDir != "" {
		m.sendInternalLocked("Browser.setDownloadBehavior", m.downloadParams(), "", nil)
	}
	m.sendInternalLocked("Target.getTargets", []byte(`{"filter":[{}]}`), "", m.rebuildLocked)
	if version == nil {
		m.sendInternalLocked("Browser.getVersion", nil, "", m.versionLocked)
	}
	m.mu.Unlock()
	m.log.Info().Msg("browser connected")

	var wg sync.WaitGroup
	ended := make(chan struct{})
	wg.Add(2)
	go func() { defer wg.Done(); up.writeLoop() }()
	go func() { defer wg.Done(); m.probeUpstream(up, ended) }()
	pong := func(payload []byte) { up.q.pushForce(frame{op: websocket.PongMessage, head: payload}) }
	for {
		b, over, err := readWireMessage(up.br, m.cfg.UpstreamMessageLimit, pong)
		if err != nil {
			break
		}
		up.reads.Add(1)
		if over {
			m.upstreamOversized(up, b)
			continue
		}
		m.handleUpstream(up, b)
	}
	close(ended)
	up.close()
	wg.Wait()
	m.mu.Lock()
	m.upstreamLostLocked(up)
	closed := m.closed
	m.mu.Unlock()
	if !closed {
		m.log.Error().Msg("browser connection lost: pending calls failed, reconnecting")
	}
}

// probeUpstream drops a browser connection that has gone silent: after PingInterval without a message it
// asks the browser for its version, and if nothing at all arrives within PongTimeout after that, the
// browser is taken for hung and the connection is closed, which fails pending calls and starts the
// reconnect (and, if the browser stays unreachable, the relaunch hook). A busy browser is never cut off:
// any message it sends counts as an answer.
func (m *Mux) probeUpstream(up *upstream, ended <-chan struct{}) {
	tick := time.NewTicker(m.cfg.PingInterval)
	defer tick.Stop()
	seen := up.reads.Load()
	var probedAt time.Time
	for {
		select {
		case <-ended:
			return
		case now := <-tick.C:
			if n := up.reads.Load(); n != seen {
				seen, probedAt = n, time.Time{}
				continue
			}
			if probedAt.IsZero() {
				m.mu.Lock()
				if m.up == up {
					m.sendInternalLocked("Browser.getVersion", nil, "", nil)
				}
				m.mu.Unlock()
				probedAt = now
				continue
			}
			if now.Sub(probedAt) >= m.cfg.PongTimeout {
				m.log.Error().Dur("silent_for", now.Sub(probedAt)+m.cfg.PingInterval).
					Msg("browser stopped answering: dropping its connection")
				up.close()
				return
			}
		}
	}
}

func (m *Mux) versionLocked(res []byte, failed bool) {
	if failed {
		return
	}
	var v struct {
		ProtocolVersion string `json:"protocolVersion"`
		Product         string `json:"product"`
		Revision        string `json:"revision"`
		UserAgent       string `json:"userAgent"`
		JSVersion       string `json:"jsVersion"`
	}
	if json.Unmarshal(res, &v) != nil {
		return
	}
	m.version = map[string]any{
		"Browser": v.Product, "Protocol-Version": v.ProtocolVersion, "User-Agent": v.UserAgent,
		"V8-Version": v.JSVersion, "WebKit-Version": v.Revision,
	}
}

// upstreamLostLocked fails everything that was waiting on the connection; ownership stays.
func (m *Mux) upstreamLostLocked(up *upstream) {
	if m.up != up {
		return
	}
	m.up = nil
	pend := m.pending
	m.pending = map[int32]*pending{}
	for _, p := range pend {
		m.failPendingLocked(p, codeInternal, "Browser disconnected")
	}
	if m.creating != nil {
		m.abandonCreateLocked(m.creating)
	}
	m.creating = nil
	for _, q := range m.createQ {
		if q.c.cl.conn == q.c {
			m.sendLocked(q.c, errorFrame(q.msg[q.info.idStart:q.info.idEnd], q.info.sessionID, codeInternal, "Browser disconnected"))
		}
	}
	m.createQ = nil
	for sid, s := range m.sessions {
		if c := s.owner.conn; c != nil {
			p := append([]byte(`{"sessionId":`), appendJSONString(nil, sid)...)
			if s.target != nil {
				p = append(append(p, `,"targetId":`...), appendJSONString(nil, s.target.id)...)
			}
			m.sendLocked(c, eventFrame("Target.detachedFromTarget", append(p, '}')))
		}
	}
	clear(m.sessions)
	for _, t := range m.targets {
		t.autoConn = nil
	}
}

func (m *Mux) failPendingLocked(p *pending, code int, msg string) {
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
	info, _ := scanUpstream(prefix)
	if !info.hasID() {
		return
	}
	id, err := strconv.ParseInt(string(prefix[info.idStart:info.idEnd]), 10, 32)
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
		if p.kind == kindCreate && m.creating != nil && m.creating.park == p.park {
			m.abandonCreateLocked(m.creating)
			m.creating = nil
			defer m.nextCreateLocked()
		}
		m.failPendingLocked(p, codeServer, "response exceeds the mux's upstream message limit")
	}
}

// upEvent is the decoded params of the browser-level events the mux acts on.
type upEvent struct {
	Params struct {
		TargetInfo         json.RawMessage `json:"targetInfo"`
		TargetID           string          `json:"targetId"`
		SessionID          string          `json:"sessionId"`
		WaitingForDebugger bool            `json:"waitingForDebugger"`
		FrameID            string          `json:"frameId"`
		GUID               string          `json:"guid"`
		State              string          `json:"state"`
	} `json:"params"`
}

type targetInfo struct {
	TargetID         string `json:"targetId"`
	Type             string `json:"type"`
	URL              string `json:"url"`
	OpenerID         string `json:"openerId"`
	BrowserContextID string `json:"browserContextId"`
	ParentFrameID    string `json:"parentFrameId"`
}

// handleUpstream routes one browser message.
func (m *Mux) handleUpstream(up *upstream, b []byte) {
	info, err := scanUpstream(b)
	if err != nil {
		m.log.Debug().Err(err).Msg("unreadable browser message dropped")
		return
	}
	m.mu.Lock()
	if m.up != up {
		m.mu.Unlock()
		return
	}
	m.batching = true
	switch {
	case info.hasID() && !info.hasMethod:
		m.responseLocked(b, info)
	case info.sessionID != "":
		m.sessionEventLocked(b, info)
	default:
		m.browserEventLocked(b, info)
	}
	m.batching = false
	m.mu.Unlock()
	for i, c := range m.kicked {
		c.writeInline()
		m.kicked[i] = nil
	}
	m.kicked = m.kicked[:0]
}

func (m *Mux) responseLocked(b []byte, info msgInfo) {
	id64, err := strconv.ParseInt(string(b[info.idStart:info.idEnd]), 10, 32)
	if err != nil {
		return
	}
	p := m.pending[int32(id64)]
	if p == nil {
		return
	}
	delete(m.pending, int32(id64))
	if p.kind == kindInternal {
		if p.internal != nil {
			var r struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			failed := json.Unmarshal(b, &r) != nil || r.Error != nil
			p.internal(r.Result, failed)
		}
		return
	}
	spliced := frame{head: b[:info.idStart], mid: p.origID, tail: b[info.idEnd:]}
	switch p.kind {
	case kindGetTargets:
		if f, ok := m.filterTargetsLocked(p, b); ok {
			spliced = f
		}
	case kindCreate:
		var rec *createRec
		if m.creating != nil && m.creating.park == p.park {
			rec = m.creating
			m.creating = nil
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
				m.settleClaimsLocked(rec, t)
			}
			if t.owner == nil && !t.closing {
				m.ownLocked(t, p.c.cl, p.park)
			}
		} else if rec != nil {
			m.abandonCreateLocked(rec)
		}
		p.park.f = spliced
		p.park.ready = true
		m.releaseLocked(p.park)
		m.nextCreateLocked()
		return
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
		}
	}
	if p.c.cl.conn == p.c {
		m.sendLocked(p.c, spliced)
	}
}

// filterTargetsLocked rewrites a getTargets answer to the client's own targets, splicing Chrome's bytes.
// settleClaimsLocked keeps, of what appeared while a create was pending, only the created page and the tab
// nearest to it in Chrome's announcements (a create makes one of each). Anything else (the startup tab
// of a just-launched browser, a human's new window) goes back to nobody.
func (m *Mux) settleClaimsLocked(rec *createRec, page *target) {
	pos := -1
	for i, t := range rec.claimed {
		if t == page {
			pos = i
		}
	}
	var tab *target
	bestD := 0
	for i, t := range rec.claimed {
		if t.typ != "tab" {
			continue
		}
		d := i
		if pos >= 0 {
			d = dist(i, pos)
		}
		if tab == nil || d < bestD || (d == bestD && i < pos) { // on a tie, the tab announced before its page
			tab, bestD = t, d
		}
	}
	for _, t := range rec.claimed {
		if !t.held {
			continue
		}
		t.held = false
		if t != page && t != tab {
			m.log.Debug().Str("target", t.id).Str("type", t.typ).Msg("appeared during a create but not made by it: left to nobody")
			t.owner = nil
			continue
		}
		if !t.closing {
			m.ownLocked(t, rec.c.cl, rec.park)
		}
	}
}

// abandonCreateLocked lets go of what a create that got no answer had claimed.
func (m *Mux) abandonCreateLocked(rec *createRec) {
	for _, t := range rec.claimed {
		if t.held {
			t.held, t.owner = false, nil
		}
	}
}

func dist(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
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
		if t := m.targets[ti.TargetID]; t == nil || t.owner != p.c.cl || t.closing || t.held {
			continue
		}
		if n > 0 {
			res = append(res, ',')
		}
		res = append(res, raw...)
		n++
	}
	res = append(res, "]}"...)
	return resultFrame(p.origID, p.sessionID, res), true
}

func (m *Mux) addTargetLocked(t *target) {
	m.targets[t.id] = t
	m.order = append(m.order, t)
}

func (m *Mux) removeTargetLocked(t *target) {
	delete(m.targets, t.id)
	for i, o := range m.order {
		if o == t {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	if t.owner != nil {
		m.ownershipChangedLocked()
	}
}

// ownLocked gives t to cl and does what a new target of a client implies: discovery event, virtual
// auto-attach, tab cap.
func (m *Mux) ownLocked(t *target, cl *client, park *parked) {
	m.log.Debug().Str("client", cl.id).Str("target", t.id).Str("type", t.typ).Str("opener", t.opener).RawJSON("info", t.info).Msg("target owned")
	t.owner = cl
	m.touchTargetLocked(t)
	m.ownershipChangedLocked()
	if t.info != nil {
		m.deliverTargetEventLocked(t, eventFrame("Target.targetCreated", targetInfoParams(t.info)).head)
	}
	m.maybeAutoAttachLocked(t, park)
	if t.typ == "page" {
		m.enforceTabCapLocked(cl, t)
	}
}

// maybeAutoAttachLocked does the virtual auto-attach of t for its owner, when the owner asked for it.
// Frames and dedicated workers are children: they attach inside their parent's session, as on Chrome.
func (m *Mux) maybeAutoAttachLocked(t *target, park *parked) {
	if t.owner == nil || t.closing {
		return
	}
	c := t.owner.conn
	if c == nil || !c.autoAttach || t.autoConn == c || t.typ == "iframe" || t.typ == "worker" || t.typ == "browser" {
		return
	}
	if !filterMatch(c.autoFilter, t.typ) {
		return
	}
	m.autoAttachLocked(t, c, park)
}

// attributeLocked finds the owner of a target that appeared: its opener's owner, its parent frame's
// owner, the owner of its browser context, or the client whose createTarget is in flight.
// Only a target that just appeared can be the pending create's: an existing unowned target (a human's tab,
// the startup page) changing while a create is in flight is not.
func (m *Mux) attributeLocked(t *target, appeared bool) (*client, *parked) {
	cl, park, _ := m.attributeClaimLocked(t, appeared)
	return cl, park
}

// maxClaims bounds what one pending create may hold back (a create makes a tab and a page).
const maxClaims = 16

// attributeClaimLocked is attributeLocked that also reports a claim by the pending create.
func (m *Mux) attributeClaimLocked(t *target, appeared bool) (*client, *parked, bool) {
	if o := m.targets[t.opener]; t.opener != "" && o != nil && o.owner != nil {
		return o.owner, nil, false
	}
	if o := m.targets[t.parentFrame]; t.parentFrame != "" && o != nil && o.owner != nil {
		return o.owner, nil, false
	}
	if t.context != "" {
		for _, cl := range m.clients {
			if cl.contexts[t.context] {
				return cl, nil, false
			}
		}
	}
	if appeared && m.creating != nil && t.opener == "" && (t.typ == "page" || t.typ == "tab") && len(m.creating.claimed) < maxClaims {
		m.creating.claimed = append(m.creating.claimed, t)
		return m.creating.c.cl, m.creating.park, true
	}
	return nil, nil, false
}

func (m *Mux) browserEventLocked(b []byte, info msgInfo) {
	method := info.method
	if !strings.HasPrefix(method, "Target.") && !strings.HasPrefix(method, "Browser.download") {
		return // nothing else browser-level belongs to a client
	}
	var ev upEvent
	if json.Unmarshal(b, &ev) != nil {
		return
	}
	pr := &ev.Params
	if strings.HasPrefix(method, "Target.") {
		m.touchActivityLocked()
	}
	switch method {
	case "Target.targetCreated", "Target.targetInfoChanged":
		var ti targetInfo
		if json.Unmarshal(pr.TargetInfo, &ti) != nil || ti.TargetID == "" {
			return
		}
		t := m.targets[ti.TargetID]
		isNew := t == nil
		if isNew {
			t = &target{id: ti.TargetID}
			m.addTargetLocked(t)
		}
		t.info = pr.TargetInfo
		t.typ, t.url, t.opener, t.context, t.parentFrame = ti.Type, ti.URL, ti.OpenerID, ti.BrowserContextID, ti.ParentFrameID
		t.seen = true
		if t.owner == nil {
			if t.closing {
				return
			}
			cl, park, claimed := m.attributeClaimLocked(t, isNew && method == "Target.targetCreated")
			switch {
			case claimed:
				t.owner, t.held = cl, true
				m.touchTargetLocked(t)
			case cl != nil:
				m.ownLocked(t, cl, park)
			}
			return
		}
		if t.held {
			return // replayed with its latest info when the create is answered
		}
		if isNew || method == "Target.targetInfoChanged" {
			m.deliverTargetEventLocked(t, b)
		}
		if method == "Target.targetCreated" {
			// A replay after a reconnect: the owner's virtual auto-attach resumes.
			m.maybeAutoAttachLocked(t, nil)
		}
	case "Target.targetDestroyed", "Target.targetCrashed":
		t := m.targets[pr.TargetID]
		if t == nil {
			return
		}
		m.deliverTargetEventLocked(t, b)
		if method == "Target.targetDestroyed" {
			m.removeTargetLocked(t)
		}
	case "Target.attachedToTarget":
		var ti targetInfo
		json.Unmarshal(pr.TargetInfo, &ti)
		t := m.targets[ti.TargetID]
		if t != nil && t.owner != nil && t.owner.conn != nil && !t.closing {
			m.sessions[pr.SessionID] = &session{id: pr.SessionID, owner: t.owner, target: t, root: t}
			m.sendLocked(t.owner.conn, wholeFrame(b))
			return
		}
		// Nobody here wants this session: let the target run and let go of it.
		m.releaseSessionLocked(pr.SessionID, pr.WaitingForDebugger, true)
	case "Target.detachedFromTarget":
		if s := m.sessions[pr.SessionID]; s != nil {
			delete(m.sessions, pr.SessionID)
			if s.owner.conn != nil {
				m.sendLocked(s.owner.conn, wholeFrame(b))
			}
		}
	case "Browser.downloadWillBegin":
		t := m.targets[pr.FrameID]
		if t == nil || t.owner == nil {
			return
		}
		m.guids[pr.GUID] = t.owner
		if c := t.owner.conn; c != nil && c.downloadEvents {
			m.sendLocked(c, wholeFrame(b))
		}
	case "Browser.downloadProgress":
		cl := m.guids[pr.GUID]
		if cl == nil {
			return
		}
		if pr.State == "completed" || pr.State == "canceled" {
			delete(m.guids, pr.GUID)
		}
		if c := cl.conn; c != nil && c.downloadEvents {
			m.sendLocked(c, wholeFrame(b))
		}
	}
}

// releaseSessionLocked resumes a target nobody asked to pause and, for a browser-level session, detaches.
func (m *Mux) releaseSessionLocked(sid string, waiting, detach bool) {
	if sid == "" {
		return
	}
	if waiting {
		m.sendInternalLocked("Runtime.runIfWaitingForDebugger", nil, sid, nil)
	}
	if detach {
		m.sendInternalLocked("Target.detachFromTarget", append(append([]byte(`{"sessionId":`), appendJSONString(nil, sid)...), '}'), "", nil)
	}
}

// sessionEventLocked routes an event on a session to the session's owner. Child sessions (OOPIFs,
// workers) announced inside an owned session become that owner's.
func (m *Mux) sessionEventLocked(b []byte, info msgInfo) {
	s := m.sessions[info.sessionID]
	switch info.method {
	case "Target.attachedToTarget":
		var ev upEvent
		if json.Unmarshal(b, &ev) != nil {
			return
		}
		if s == nil || s.owner.conn == nil {
			m.releaseSessionLocked(ev.Params.SessionID, ev.Params.WaitingForDebugger, false)
			return
		}
		var ti targetInfo
		json.Unmarshal(ev.Params.TargetInfo, &ti)
		t := m.targets[ti.TargetID]
		if t != nil && t.owner != nil && t.owner != s.owner {
			// Never hand one client a session to another's target (a tab wrongly attributed).
			m.releaseSessionLocked(ev.Params.SessionID, ev.Params.WaitingForDebugger, false)
			m.sendInternalLocked("Target.detachFromTarget", append(append([]byte(`{"sessionId":`), appendJSONString(nil, ev.Params.SessionID)...), '}'), info.sessionID, nil)
			return
		}
		if t != nil && t.owner == nil && !t.closing {
			t.owner = s.owner
			m.ownershipChangedLocked()
		}
		root := s.root
		if t != nil && t.typ == "page" { // puppeteer's page inside its tab session
			root = t
		}
		m.sessions[ev.Params.SessionID] = &session{id: ev.Params.SessionID, owner: s.owner, target: t, root: root}
	case "Target.detachedFromTarget":
		var ev upEvent
		if json.Unmarshal(b, &ev) == nil {
			delete(m.sessions, ev.Params.SessionID)
		}
	}
	if s == nil || s.owner.conn == nil {
		return
	}
	m.sendLocked(s.owner.conn, wholeFrame(b))
}

// rebuildLocked re-derives ownership from a fresh getTargets after every (re)connect: owned targets that
// still exist keep their owner; those gone are dropped, and after a relaunch a restored page with the
// same URL as a lost one goes back to that page's owner. On a fresh launch, orphan http(s) pages (left
// by a crash, restored by the profile) are closed once.
func (m *Mux) rebuildLocked(res []byte, failed bool) {
	if failed {
		return
	}
	var r struct {
		TargetInfos []json.RawMessage `json:"targetInfos"`
	}
	if json.Unmarshal(res, &r) != nil {
		return
	}
	present := map[string]bool{}
	for _, raw := range r.TargetInfos {
		var ti targetInfo
		if json.Unmarshal(raw, &ti) != nil {
			continue
		}
		present[ti.TargetID] = true
		if m.targets[ti.TargetID] == nil {
			t := &target{id: ti.TargetID, info: raw, typ: ti.Type, url: ti.URL, opener: ti.OpenerID, context: ti.BrowserContextID, parentFrame: ti.ParentFrameID, seen: true}
			m.addTargetLocked(t)
		}
	}
	var lost []*target
	for _, t := range append([]*target(nil), m.order...) {
		if present[t.id] {
			continue
		}
		if t.owner != nil && t.typ == "page" && t.url != "" && !t.closing {
			lost = append(lost, t)
		}
		m.removeTargetLocked(t)
	}
	for _, l := range lost {
		if m.clients[l.owner.id] != l.owner {
			continue
		}
		for _, t := range m.order {
			if t.owner == nil && t.typ == "page" && t.url == l.url && !t.closing {
				m.ownLocked(t, l.owner, nil)
				break
			}
		}
	}
	if m.fresh {
		m.fresh = false
		for _, t := range append([]*target(nil), m.order...) {
			if t.owner == nil && t.typ == "page" && (strings.HasPrefix(t.url, "http://") || strings.HasPrefix(t.url, "https://")) {
				m.log.Info().Str("target", t.id).Msg("fresh launch: closing an orphan tab")
				m.closeTargetLocked(t)
			}
		}
	}
	m.ownershipChangedLocked()
}
