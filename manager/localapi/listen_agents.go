package localapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
)

// ListenAgents binds the agents' socket: 0666, since the agent users are many, and each request learns its
// peer's uid (admit decides).
func ListenAgents(path string) (net.Listener, error) { return bindSocket(path, 0o666) }

// CapAgents bounds the connections each peer uid holds open to the agents' socket (VIBE_AGENT_CONN_MAX):
// one past it is answered 429 naming the knob and closed at once, so that no uid (any local user may
// connect) can take the manager's descriptors, and the other agent users and the owner's socket are served.
// vibe_agent_connections shows the connections open.
// The collector is vibe_agent_connections, the connections open; refused is told of each connection refused.
func CapAgents(ln net.Listener, max int, refused func()) (net.Listener, prometheus.Collector) {
	l := &agentListener{Listener: ln, max: max, open: map[int]int{}, refused: refused,
		refusing: make(chan struct{}, agentRefusals)}
	return l, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "vibe_agent_connections", Help: "Connections open to run/agent.sock (VIBE_AGENT_CONN_MAX bounds each peer uid's).",
	}, func() float64 { return float64(l.total()) })
}

// agentListener counts each peer uid's open connections and refuses those past max.
type agentListener struct {
	net.Listener
	max     int
	refused func()

	refusing chan struct{}  // a slot per refusal being said (capacity agentRefusals)
	said     sync.WaitGroup // the refusals being said: Close waits for them

	mu     sync.Mutex  // mu guards the fields below
	open   map[int]int // peer uid -> its connections open
	closed bool        // no refusal starts once Close waits for them
}

// agentRefusals bounds the refusals said at once, each for at most refuseLinger: past it a connection over
// its uid's cap is closed unanswered, so that a flood costs the manager no more descriptors than this.
const agentRefusals = 32

// agentConn is an admitted connection to the agents' socket and its peer's uid (-1 when it cannot be
// read, which no agent user has).
type agentConn struct {
	net.Conn
	uid     int
	release sync.Once
	l       *agentListener
}

func (c *agentConn) Close() error {
	c.release.Do(func() { c.l.done(c.uid) })
	return c.Conn.Close()
}

func (l *agentListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid := -1
		if uc, ok := c.(*net.UnixConn); ok {
			if id, err := peerUID(uc); err == nil {
				uid = id
			}
		}
		if l.take(uid) {
			return &agentConn{Conn: c, uid: uid, l: l}, nil
		}
		l.refused()
		l.refuse(c, fmt.Sprintf("%v: uid %d already holds %d connections to %s, its quota (VIBE_AGENT_CONN_MAX=%d): "+
			"close the ones it keeps idle, or raise the knob", apierr.ErrQuota, uid, l.max, api.AgentSocketRel, l.max))
	}
}

// refuse says msg to c from a goroutine of its own, while fewer than agentRefusals are being said, else
// closes c unanswered.
func (l *agentListener) refuse(c net.Conn, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.refusing <- struct{}{}:
		if !l.closed {
			l.said.Go(func() {
				defer func() { <-l.refusing }()
				refuseConn(c, msg)
			})
			return
		}
		<-l.refusing
	default:
	}
	c.Close()
}

// Close stops accepting and waits for the refusals being said.
func (l *agentListener) Close() error {
	err := l.Listener.Close()
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.said.Wait()
	return err
}

func (l *agentListener) take(uid int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[uid] >= l.max {
		return false
	}
	l.open[uid]++
	return true
}

func (l *agentListener) done(uid int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[uid]--; l.open[uid] <= 0 {
		delete(l.open, uid)
	}
}

func (l *agentListener) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, k := range l.open {
		n += k
	}
	return n
}

// refuseLinger bounds a refusal: its write, and the wait for what the peer sends meanwhile.
const refuseLinger = 100 * time.Millisecond

// refuseConn answers a connection that is not served with 429 and msg, as the API's errors read, and closes
// it. Its request is read and dropped until the peer is done or refuseLinger passes, so that a client that
// sends it just after connecting gets the answer rather than a broken pipe.
func refuseConn(c net.Conn, msg string) {
	defer c.Close()
	body, _ := json.Marshal(api.Error{Message: msg, Code: api.CodeQuota})
	_ = c.SetDeadline(time.Now().Add(refuseLinger))
	_, _ = fmt.Fprintf(c, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"+
		"Connection: close\r\n\r\n%s", len(body), body)
	if uc, ok := c.(*net.UnixConn); ok {
		_ = uc.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 1<<20))
}
