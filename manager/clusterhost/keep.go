package clusterhost

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/config"
	"vibebrowser/mux"
	"vibebrowser/mux/downloads"
	"vibebrowser/state"
)

// What a task does on a store of another host is kept on the task's host (SPEC §19 "Routing"): the store's
// host sends each download of the task's clients, the steps of their tabs and the faults of the store's
// browser to the task's host, and the task's host asks the store's host for its clients' tabs and their
// pictures after each of its calls. All of it crosses the doors as exchanges (cluster/exchange.go), whose
// mutual TLS names the host at each end: a task's host takes what the host the store is placed on sends, and
// the store's host answers a host only about that host's own clients (the door each client came through).

// Exchange kinds, sent by a store's host to a task's host (arrivals) or asked by a task's host of the store's
// (looks.go).
const (
	kindDownload  = "download"  // a finished download: its record in the header, its file in the body
	kindSteps     = "steps"     // steps of a client's tabs, in order
	kindFault     = "fault"     // the store's browser died, was relaunched, or had its login set back
	kindTabs      = "tabs"      // the list of a client's tabs
	kindShot      = "shot"      // the picture of one of them
	kindPasswords = "passwords" // the texts a client typed into password fields, hidden in its calls' entries
)

// Keep is what this host does with what its tasks did on stores of other hosts: each hook is the manager's,
// as it does it for a store of its own.
type Keep struct {
	// DownloadDir is client's downloads folder for sp here (the shim's VIBE_DOWNLOAD_DIR), made and given to
	// the store's agent user when missing.
	DownloadDir func(sp browsers.Spec, client string) string
	// Downloaded records a download placed here: its record, its task's quota and timeline step.
	Downloaded func(sp browsers.Spec, d downloads.Download)
	// TabStep records a step of a task's tab on its timeline.
	TabStep func(sp browsers.Spec, ev mux.TimelineEvent)
	// Cut says that a download of client's was cancelled at task's quota on sp's host: in the events and on
	// the task's timeline.
	Cut func(sp browsers.Spec, task, client, msg string)
	// Fault puts an event of sp's browser (died, relaunched, login restored) on the timelines of the active
	// tasks that use the store here.
	Fault func(kind, key string, ev api.Event)
}

// arrivals takes in what the hosts that run stores send back about this host's tasks.
type arrivals struct {
	host string // this host's name
	cfg  *config.Config
	db   *state.DB
	keep Keep
	// runs is the host store is placed on, by the cluster's word when this host's view does not name want.
	runs func(ctx context.Context, store, want string) string
	log  zerolog.Logger
}

// fromOwner checks that peer, the sender, is the host store is placed on: only a store's host speaks for the
// clients it serves.
func (a *arrivals) fromOwner(ctx context.Context, peer, store string) error {
	if h := a.runs(ctx, store, peer); h != peer {
		return fmt.Errorf("host %s does not run store %s (it is placed on host %q): only a store's host sends what "+
			"the clients it serves did", peer, store, h)
	}
	return nil
}

// spec is store's spec as this host's state has it.
func (a *arrivals) spec(ctx context.Context, store string) (browsers.Spec, error) {
	s, err := a.db.GetStore(ctx, store)
	if err != nil {
		return browsers.Spec{}, fmt.Errorf("store %s is not known on host %s: %w", store, a.host, err)
	}
	return browsers.StoreSpec(s)
}

// taskHere reports whether task is a task of this host's on store.
func (a *arrivals) taskHere(ctx context.Context, task, store string) bool {
	t, err := a.db.GetTask(ctx, task)
	return err == nil && t.StoreID == store
}

// headRule is the form every exchange's header must have; a refusal names it.
const headRule = "an exchange's header is one JSON object whose keys appear once, exactly as named (in their case), " +
	"and no other keys"

// decodeHead reads an exchange's header (or a body of JSON) strictly, as the mux reads a client's message
// (SPEC §20): keys match exactly, a duplicate in any case and an unknown key are refused, so no reader of ours
// sees another value than the one checked.
func decodeHead(b []byte, v any) error {
	if err := json.Unmarshal(b, v, json.RejectUnknownMembers(true)); err != nil {
		return fmt.Errorf("%s: %v", headRule, err)
	}
	return nil
}

// handleExchanges has door answer the exchanges of what a task did on a store of another host.
func (ch *Host) handleExchanges(door *cluster.DoorServer) {
	door.HandleExchange(kindDownload, ch.arrivals.takeDownload)
	door.HandleExchange(kindSteps, ch.arrivals.takeSteps)
	door.HandleExchange(kindFault, ch.arrivals.takeFault)
	door.HandleExchange(kindTabs, ch.answerTabs)
	door.HandleExchange(kindShot, ch.answerShot)
	door.HandleExchange(kindPasswords, ch.answerPasswords)
}

// runsOn is arrivals' runs: this host's view of store's placement, asked of the cluster when it does not name
// want (a store that just moved to want, or failed over there, while this host's watch lagged).
func (ch *Host) runsOn(ctx context.Context, store, want string) string {
	h := ch.Where(store)
	if h == want {
		return h
	}
	ctx, cancel := context.WithTimeout(ctx, refreshBound)
	defer cancel()
	if fresh, err := ch.placement.Refresh(ctx, store); err == nil {
		h = fresh
	}
	return h
}

// spawn runs f on a goroutine of the host's, which Close ends (its ctx) and waits for; false once closed.
func (ch *Host) spawn(f func(ctx context.Context)) bool {
	ch.workMu.Lock()
	defer ch.workMu.Unlock()
	if ch.closed {
		return false
	}
	ch.wg.Go(func() { f(ch.runCtx) })
	return true
}

// exchange sends an exchange of kind about store to host, through its door: head, then size bytes of body
// (nil for none).
func (ch *Host) exchange(ctx context.Context, host, store, kind string, head any, body io.Reader, size, answerMax int64) ([]byte, error) {
	addr := ch.advertise(host)
	if addr == "" {
		return nil, fmt.Errorf("host %s has no door known (is it alive?)", host)
	}
	return ch.dialer.Exchange(ctx, host, addr, store, kind, head, body, size, answerMax)
}

// tryBackoff calls try up to tries times, waiting first after the first failure and twice as long after
// each next one, while again says so and ctx lasts; it returns the last error.
func tryBackoff(ctx context.Context, tries int, first time.Duration, again func() bool, try func() error) error {
	wait := first
	var err error
	for n := 1; ; n++ {
		if err = try(); err == nil || n == tries || !again() {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait *= 2
	}
}
