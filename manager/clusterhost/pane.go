package clusterhost

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/cluster"
)

// One pane (SPEC §19): the status and the web UI of any host show the whole cluster. Every host is known from
// its heartbeat; what runs on another host is asked of it over NATS, each host at once and within PaneBound,
// so that one host that stopped answering is shown as unreachable instead of holding the page. A store's
// pages, live view and takeover come from its own host's UI, through the door (DialUI, handUI).

// PaneBound is how long a host has to answer for the pane (SPEC §19: "a host that does not answer within 1 s
// is shown as unreachable"): a question of its browsers, or its door for a page of its UI.
const PaneBound = time.Second

// paneFresh is how long a host's answer is used again before it is asked anew: the live pages look every
// 500 ms, and a second-old count of clients and tabs is fresh enough for a person.
const paneFresh = time.Second

// askBrowsers is the question of the browsers a host runs, as its status shows them.
const askBrowsers = "browsers"

// pane keeps the other hosts' last answers and asks them again. Its asks end with its context.
type pane struct {
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the asks in flight

	mu      sync.Mutex // guards answers and the answers' fields
	answers map[string]*hostAnswer
}

// hostAnswer is what one host last answered, and the ask in flight.
type hostAnswer struct {
	browsers []api.Browser
	at       time.Time     // when the last ask ended; zero before the first
	err      string        // why the last ask got no answer, for a person; "" when it was answered
	asking   chan struct{} // closed when the ask in flight ends; nil when none is
}

func newPane() *pane {
	ctx, cancel := context.WithCancel(context.Background())
	return &pane{ctx: ctx, cancel: cancel, answers: map[string]*hostAnswer{}}
}

// close ends the asks in flight and waits for them.
func (p *pane) close() {
	p.cancel()
	p.wg.Wait()
}

// Pane is the cluster as this host's status shows it (SPEC §19 "One pane"): every host, each one that has
// nothing fresh to show saying why, and the browsers the other hosts run, by store id, as each answered. It
// waits at most PaneBound, for the hosts that answered last time: a host whose last ask failed is shown as
// unreachable at once, and asked again meanwhile.
func (ch *Host) Pane(ctx context.Context) ([]api.ClusterHost, map[string]api.Browser) {
	views := ch.hosts.View()
	var waits []chan struct{}
	for _, v := range views {
		if v.Host != ch.host && v.Alive {
			if w := ch.pane.refresh(v.Host, ch.askBrowsers); w != nil {
				waits = append(waits, w)
			}
		}
	}
	for _, w := range waits {
		select {
		case <-w:
		case <-ctx.Done():
		}
	}
	hosts := make([]api.ClusterHost, 0, len(views))
	browsers := map[string]api.Browser{}
	ch.pane.mu.Lock()
	defer ch.pane.mu.Unlock()
	for _, v := range views {
		h := clusterHost(v)
		switch a := ch.pane.answers[v.Host]; {
		case v.Host == ch.host:
		case !v.Alive:
			h.Unreachable = fmt.Sprintf("no heartbeat for %s (a host is dead after %s without one)",
				v.Quiet.Round(time.Second), cluster.DefaultHostTTL)
		case a == nil || a.at.IsZero():
			h.Unreachable = fmt.Sprintf("it did not answer within %s", PaneBound)
		case a.err != "":
			h.Unreachable = a.err
		default:
			for _, b := range a.browsers {
				b.Host = v.Host
				browsers[b.Key] = b
			}
		}
		hosts = append(hosts, h)
	}
	return hosts, browsers
}

// refresh asks host with ask unless its last answer is fresh or an ask is in flight, and returns the ask in
// flight to wait for, or nil when there is none or its host failed to answer last time (not waited for
// again until it answers).
func (p *pane) refresh(host string, ask func(ctx context.Context, host string) ([]api.Browser, error)) chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	a := p.answers[host]
	if a == nil {
		a = &hostAnswer{}
		p.answers[host] = a
	}
	if a.asking == nil && time.Since(a.at) >= paneFresh && p.ctx.Err() == nil {
		a.asking = make(chan struct{})
		p.wg.Go(func() {
			ctx, cancel := context.WithTimeout(p.ctx, PaneBound)
			defer cancel()
			got, err := ask(ctx, host)
			p.mu.Lock()
			defer p.mu.Unlock()
			a.at, a.browsers, a.err = time.Now(), got, ""
			if err != nil {
				a.browsers, a.err = nil, unanswered(err)
			}
			close(a.asking)
			a.asking = nil
		})
	}
	if a.err != "" {
		return nil
	}
	return a.asking
}

// unanswered says why a host's browsers are not known, for a person.
func unanswered(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("it did not answer within %s", PaneBound)
	case cluster.Unheard(err):
		return "its manager does not answer on the cluster (nothing there listens for it)"
	}
	var refused *cluster.RefusedError
	if errors.As(err, &refused) {
		return "it refused to say: " + refused.Message
	}
	return "it did not answer: " + err.Error()
}

// askBrowsers asks host for the browsers it runs.
func (ch *Host) askBrowsers(ctx context.Context, host string) ([]api.Browser, error) {
	var got []api.Browser
	err := ch.conn.Ask(ctx, host, askBrowsers, struct{}{}, &got)
	return got, err
}

// answerBrowsers answers another host's question of the browsers this host runs.
func (ch *Host) answerBrowsers(ctx context.Context, _ []byte) (any, error) {
	if ch.browsers == nil {
		return []api.Browser{}, nil
	}
	return ch.browsers(ctx)
}

// clusterHost is a host as status shows it.
func clusterHost(v cluster.HostView) api.ClusterHost {
	return api.ClusterHost{Name: v.Host, Alive: v.Alive, Advertise: v.Advertise, FreeMemMB: int64(v.FreeMem >> 20),
		Stores: v.Stores, QuietMs: v.Quiet.Milliseconds()}
}

// Owner is the host a store is placed on when that is another host than this one, as this host sees it
// (alive or not, and how long it has been silent); false when the store is this host's or not placed. When
// this host's view names a host that is not alive, the cluster is asked within half of PaneBound: the store may
// have moved meanwhile (Elsewhere says why).
func (ch *Host) Owner(ctx context.Context, store string) (api.ClusterHost, bool) {
	h := ch.Where(store)
	if h != "" && h != ch.host && !ch.hosts.Alive(h) {
		rctx, cancel := context.WithTimeout(ctx, PaneBound/2)
		if fresh, err := ch.placement.Refresh(rctx, store); err == nil {
			h = fresh
		}
		cancel()
	}
	if h == "" || h == ch.host {
		return api.ClusterHost{}, false
	}
	for _, v := range ch.hosts.View() {
		if v.Host == h {
			return clusterHost(v), true
		}
	}
	return api.ClusterHost{Name: h}, true // placed on a host never seen beating
}

// DialUI opens a connection to host's web UI through its door, for this host's UI to relay its person's
// requests for a store of that host.
func (ch *Host) DialUI(ctx context.Context, host string) (net.Conn, error) {
	addr := ch.advertise(host)
	if addr == "" {
		return nil, fmt.Errorf("host %s has no door known (no heartbeat of it was seen)", host)
	}
	return ch.dialer.DialUI(ctx, host, addr)
}

// handUI is the door's UIHandFunc: another host's connection for this host's web UI goes to serve.
func (ch *Host) handUI(serve func(peer string, conn net.Conn) error) cluster.UIHandFunc {
	return func(peer string) (func(net.Conn), error) {
		return func(conn net.Conn) {
			if err := serve(peer, conn); err != nil {
				ch.log.Warn().Err(err).Str("from", peer).Msg("door: a web UI connection not served")
				conn.Close()
			}
		}, nil
	}
}
