package forward

import (
	"context"
	"sync"
	"time"

	"vibebrowser/manager/netid"
)

// Bounds of the exit-IP checks.
const (
	exitIPFresh   = 5 * time.Minute  // a store's last check stands this long
	exitIPTimeout = 15 * time.Second // one check through the store's proxy
)

// ExitIPs is what each proxied store's exit IP was last found to be (VIBE_PROXY_CHECK_URL fetched through
// its proxy, SPEC §16), for the store's answer and page. Checks run in the background: an answer never waits
// for the network, and shows the last result until the next one is in.
type ExitIPs struct {
	ctx context.Context // the daemon's life: a check in flight ends with it
	url string          // VIBE_PROXY_CHECK_URL; "" turns every check off

	mu   sync.Mutex
	seen map[string]exitIP // mu guards seen: store id → its last check
}

// NewExitIPs checks exit IPs at url (VIBE_PROXY_CHECK_URL; "" turns every check off) for as long as ctx
// lives.
func NewExitIPs(ctx context.Context, url string) *ExitIPs {
	return &ExitIPs{ctx: ctx, url: url, seen: map[string]exitIP{}}
}

type exitIP struct {
	proxy    string // the proxy URL it was checked through; another one is checked afresh
	ip       string
	at       time.Time
	checking bool
}

// Of returns the store's last known exit IP through p ("" until a check answered), starting a check when
// there is none as recent as exitIPFresh for this proxy.
func (e *ExitIPs) Of(storeID string, p netid.Proxy) string {
	if e.url == "" {
		return ""
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	last, ok := e.seen[storeID]
	if ok && last.proxy != p.String() {
		last, ok = exitIP{}, false
	}
	if !last.checking && (!ok || time.Since(last.at) > exitIPFresh) {
		last.proxy, last.checking = p.String(), true
		go e.check(storeID, p)
	}
	e.seen[storeID] = last
	return last.ip
}

func (e *ExitIPs) check(storeID string, p netid.Proxy) {
	ip, err := ExitIP(e.ctx, p, e.url, exitIPTimeout)
	if err != nil {
		ip = "" // the proxy's own failure is the forwarder's to report (proxy_error), and doctor's
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if cur := e.seen[storeID]; cur.proxy == p.String() {
		e.seen[storeID] = exitIP{proxy: cur.proxy, ip: ip, at: time.Now()}
	}
}
