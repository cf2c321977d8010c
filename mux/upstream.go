package mux

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"vibebrowser/mux/cdpwire"
)

// The upstream connection's lifecycle: dial, serve, probe a silent browser, and on loss fail what was
// pending, reconnect with backoff and, when that is spent, relaunch.

// upstream is one browser connection: the read loop runs in runUpstream. Writes to the socket are
// serialised by wmu: the client reader that just queued a command writes the queue itself when no write
// is in progress (it saves a goroutine hand-off per call on the hot path), and the writer goroutine
// drains whatever queued behind a write in progress. Either way one goroutine writes at a time.
type upstream struct {
	nc      upConn        // the browser's WebSocket, or the pipe its keeper lent (pipeconn.go)
	tr      transport     // the browser's WebSocket or a keeper's pipe (transport.go)
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
		if err := u.tr.write(u.bw, u.batch[i]); err != nil {
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
			m.mu.Lock()
			replacing := m.replacing
			m.mu.Unlock()
			if replacing {
				select {
				case <-ctx.Done():
					return
				case endpoint = <-m.relaunched:
					tries, delay = 0, m.cfg.ReconnectMin
				}
			}
		}
		up, version, err := m.dial(ctx, endpoint)
		if err == nil {
			tries, delay = 0, m.cfg.ReconnectMin
			m.runConnection(ctx, up, version)
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

// Replacing tells the mux that its browser is gone and a replacement is on its way, which Relaunched will
// name. The mux drops what is left of the old connection and dials nothing until then: a relaunched browser
// behind a keeper listens where the old one did, and a connection the mux made to it before being told
// would be taken for the old one's, closed, and the calls on it failed.
func (m *Mux) Replacing() {
	m.mu.Lock()
	m.replacing = true
	old := m.up
	m.mu.Unlock()
	if old != nil {
		old.close()
	}
}

// Relaunched points the mux at a browser that replaced the one it served (the manager relaunched it on the
// same profile after a crash). The mux drops what is left of the old connection and dials endpoint at
// once; clients keep their connections, pages the browser restores go back to the owners of the pages
// that had their URLs, and, as after any fresh launch, restored pages nobody reclaims are closed.
func (m *Mux) Relaunched(endpoint string) {
	m.mu.Lock()
	m.fresh, m.replacing = true, false
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

// dial connects to endpoint and returns the connection with the browser's version object (also the
// cached answer of the mux's own /json/version): for an http endpoint read from /json/version first, for
// a keeper from the browser's Browser.getVersion (dialKeeper), for a ws:// URL nil (runConnection asks).
func (m *Mux) dial(ctx context.Context, endpoint string) (*upstream, map[string]any, error) {
	if err := checkUpstream(endpoint); err != nil { // a relaunched browser's endpoint is checked only here
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	q := newSendQueue(max(4*m.cfg.QueueBytes, m.cfg.ClientMessageLimit))
	var (
		nc      upConn
		br      *bufio.Reader
		tr      transport
		version map[string]any
		err     error
	)
	if socket, ok := strings.CutPrefix(endpoint, keeperPrefix); ok {
		nc, br, version, err = m.dialKeeper(ctx, socket)
		if err != nil {
			return nil, nil, fmt.Errorf("browser keeper: %w", err)
		}
		tr = keeperTransport{}
	} else {
		wsURL := endpoint
		if strings.HasPrefix(endpoint, "http") {
			v, err := cdpwire.FetchVersion(ctx, endpoint)
			if err != nil {
				return nil, nil, fmt.Errorf("browser version: %w", err)
			}
			wsURL, version = v.WebSocketDebuggerURL, v.Raw
		}
		var ws net.Conn
		ws, br, err = dialWebSocket(ctx, wsURL)
		if err != nil {
			return nil, nil, fmt.Errorf("browser websocket: %w", err)
		}
		nc, tr = ws, newWSTransport(q)
	}
	up := &upstream{nc: nc, tr: tr, br: br, q: q, timeout: m.cfg.WriteTimeout, bw: bufio.NewWriterSize(nc, 64<<10)}
	return up, version, nil
}

// runConnection serves one upstream connection until it is lost.
func (m *Mux) runConnection(ctx context.Context, up *upstream, version map[string]any) {
	m.mu.Lock()
	if m.closed || m.replacing { // replacing: dialled before Replacing, to the browser that is gone
		m.mu.Unlock()
		up.close()
		return
	}
	m.up = up
	if (m.fresh || m.cfg.LaunchedEachConnection) && m.cfg.Hooks.Launched != nil {
		m.launch.startLocked(ctx)
	}
	if version != nil {
		m.version = version
	}
	for _, t := range m.targets {
		t.seen = false
	}
	// Discovery of everything (tabs included) tells the mux every target and its opener; Chrome replays
	// the existing ones as targetCreated before answering.
	m.sendInternalLocked("Target.setDiscoverTargets", []byte(`{"discover":true,"filter":[{}]}`), "", nil)
	m.at.startAutoAttachLocked(up)
	for _, f := range m.features {
		f.connectedLocked()
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
	for {
		b, over, err := up.tr.read(up.br, m.cfg.UpstreamMessageLimit)
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
				m.log.Error().Int64("silent_for_ms", (now.Sub(probedAt) + m.cfg.PingInterval).Milliseconds()).
					Msg("browser stopped answering: dropping its connection")
				up.close()
				return
			}
		}
	}
}

// versionLocked caches the version object of a browser reached by its ws:// URL, which has no
// /json/version to read it from.
func (m *Mux) versionLocked(res []byte, failed bool) {
	if failed {
		return
	}
	if v, err := versionObject(res, false); err == nil {
		m.version = v
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
	if m.cr.inFlight != nil {
		m.cr.abandonCreateLocked(m.cr.inFlight)
	}
	m.cr.inFlight = nil
	for _, q := range m.cr.queue {
		if q.human != nil {
			q.human.finish("", ErrDisconnected)
			continue
		}
		if q.c.cl.conn == q.c {
			m.sendLocked(q.c, errorFrame(q.msg[q.info.IDStart:q.info.IDEnd], q.info.SessionID, codeInternal, "Browser disconnected"))
		}
	}
	m.cr.queue = nil
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
		t.autoConn, t.awaitAuto, t.lettingGo = nil, false, 0
	}
	m.at.autoReplay, m.at.autoOn = false, false
	for _, f := range m.features {
		f.lostLocked()
	}
}
