package cluster

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// Each host writes its heartbeat to the hosts bucket every beat: its door, its free memory and the stores it
// runs. Whether another host is alive is judged here, on this host's own clock: a host whose entry has not
// moved for the host TTL is dead, and its stores go to the living (failover.go).

// Default heartbeat timing.
const (
	DefaultBeat    = time.Second
	DefaultHostTTL = 10 * time.Second
)

// HostInfo is one host's heartbeat.
type HostInfo struct {
	Host      string    `json:"host"`
	Instance  string    `json:"instance"`  // its home's id: two homes beating under one name are refused
	Advertise string    `json:"advertise"` // host:port of its door
	FreeMem   uint64    `json:"free_mem"`  // bytes of memory available for more browsers
	Stores    []string  `json:"stores"`    // the stores whose browsers run there
	At        time.Time `json:"at"`        // its own clock, for people to read only
}

// hostSeen is a host's newest heartbeat as read here, and when its entry last moved on this host's clock.
type hostSeen struct {
	info  HostInfo
	rev   uint64
	moved time.Time
}

// HostsConfig is how this host beats and judges the others.
type HostsConfig struct {
	Self func() HostInfo // this host's heartbeat now (Host and Instance set)
	Beat time.Duration   // DefaultBeat when 0
	TTL  time.Duration   // DefaultHostTTL when 0
	Log  zerolog.Logger
	Now  func() time.Time // time.Now when nil
}

// Hosts keeps this host's heartbeat and its view of every host's. Its methods are safe for concurrent use.
type Hosts struct {
	kv  jetstream.KeyValue
	cfg HostsConfig

	mu       sync.Mutex // guards the fields below
	seen     map[string]hostSeen
	watching time.Time // when the watch first ran: a host never seen is dead only a TTL after it
}

// NewHosts is this host's side of the heartbeats kept in kv.
func NewHosts(kv jetstream.KeyValue, cfg HostsConfig) *Hosts {
	if cfg.Beat <= 0 {
		cfg.Beat = DefaultBeat
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultHostTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Hosts{kv: kv, cfg: cfg, seen: map[string]hostSeen{}}
}

// ErrTwin is the refusal to run beside another home that beats under the same host name.
var ErrTwin = errors.New("another home beats under this host name")

// Beat writes this host's heartbeat once. It refuses (ErrTwin) while another home beats under the same
// name (two machines joined as one host): each would take the other's leases for its own. A home that
// replaces a dead one under its name beats once the dead one's entry has been still for the TTL.
func (h *Hosts) Beat(ctx context.Context) error {
	self := h.cfg.Self()
	self.At = time.Now().UTC()
	if e, err := h.kv.Get(ctx, self.Host); err == nil {
		var cur HostInfo
		if json.Unmarshal(e.Value(), &cur) == nil && cur.Instance != self.Instance && h.movedWithinTTL(self.Host, e.Revision()) {
			return fmt.Errorf("%w: host %s (instance %s) beat %s ago; give each host its own VIBE_HOST",
				ErrTwin, self.Host, cur.Instance, h.cfg.Now().Sub(h.movedAt(self.Host)).Round(time.Millisecond))
		}
	}
	b, err := json.Marshal(self)
	if err != nil {
		return err
	}
	if _, err := h.kv.Put(ctx, self.Host, b); err != nil {
		return fmt.Errorf("heartbeat of host %s: %w", self.Host, err)
	}
	return nil
}

// movedWithinTTL reports whether host's entry, now at revision rev, moved within the TTL as seen here (a
// revision not seen yet has just moved).
func (h *Hosts) movedWithinTTL(host string, rev uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.seen[host]
	if !ok || s.rev != rev {
		return true // moved since this host last looked: alive
	}
	return h.cfg.Now().Sub(s.moved) < h.cfg.TTL
}

func (h *Hosts) movedAt(host string) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[host].moved
}

// Run beats and watches the others' beats until ctx ends.
func (h *Hosts) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(h.cfg.Beat)
		defer t.Stop()
		for {
			if err := h.Beat(ctx); err != nil && ctx.Err() == nil {
				h.cfg.Log.Warn().Err(err).Msg("heartbeat")
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	})
	wg.Go(func() { h.watch(ctx) })
	wg.Wait()
}

// watch follows the hosts bucket, noting when each entry moves. This host's own beat comes back through it
// every beat, so a watch quiet for three beats has stalled and is started again.
func (h *Hosts) watch(ctx context.Context) {
	h.mu.Lock()
	if h.watching.IsZero() {
		h.watching = h.cfg.Now()
	}
	h.mu.Unlock()
	watchBucket(ctx, h.kv, 3*h.cfg.Beat, h.note, h.cfg.Log)
}

// note takes entry e of the hosts bucket in.
func (h *Hosts) note(e jetstream.KeyValueEntry) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Operation() != jetstream.KeyValuePut {
		delete(h.seen, e.Key())
		return
	}
	var info HostInfo
	if json.Unmarshal(e.Value(), &info) != nil || info.Host != e.Key() {
		return
	}
	if s, ok := h.seen[e.Key()]; ok && s.rev >= e.Revision() {
		return
	}
	h.seen[e.Key()] = hostSeen{info: info, rev: e.Revision(), moved: h.cfg.Now()}
}

// HostView is a host as this host sees it.
type HostView struct {
	HostInfo
	Alive bool          `json:"alive"`
	Quiet time.Duration `json:"quiet"` // since its entry last moved, on this host's clock
}

// View lists every host known, by name.
func (h *Hosts) View() []HostView {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.cfg.Now()
	out := make([]HostView, 0, len(h.seen))
	for _, s := range h.seen {
		quiet := now.Sub(s.moved)
		out = append(out, HostView{HostInfo: s.info, Alive: quiet < h.cfg.TTL, Quiet: quiet})
	}
	slices.SortFunc(out, func(a, b HostView) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

// Alive reports whether host's heartbeat moved within the TTL.
func (h *Hosts) Alive(host string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.seen[host]
	return ok && h.cfg.Now().Sub(s.moved) < h.cfg.TTL
}

// Dead reports whether host is dead as seen here: its entry has been still for the TTL, or it has none and
// this host has watched the bucket for the TTL. A host this host cannot judge yet is not dead.
func (h *Hosts) Dead(host string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.cfg.Now()
	if s, ok := h.seen[host]; ok {
		return now.Sub(s.moved) >= h.cfg.TTL
	}
	return !h.watching.IsZero() && now.Sub(h.watching) >= h.cfg.TTL
}

// Known reports whether host has beaten at least once, as seen here.
func (h *Hosts) Known(host string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.seen[host]
	return ok
}

// Exists reports whether host has beaten at least once: as seen here, or, when this host's watch has not
// brought it yet (this host just started), as the bucket says.
func (h *Hosts) Exists(ctx context.Context, host string) bool {
	if h.Known(host) {
		return true
	}
	_, err := h.kv.Get(ctx, host)
	return err == nil
}

// Names lists the known hosts, comma-separated, for messages.
func (h *Hosts) Names() string {
	var names []string
	for _, v := range h.View() {
		names = append(names, v.Host)
	}
	if len(names) == 0 {
		return "none yet"
	}
	return strings.Join(names, ", ")
}
