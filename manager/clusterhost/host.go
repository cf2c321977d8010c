// Package clusterhost is a manager as one host of a cluster (SPEC §19): it joins it, holds the leases of the
// stores it runs, and reaches the stores that run on other hosts.
package clusterhost

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/cluster"
	"vibebrowser/manager/config"
	"vibebrowser/mux/clientid"
	"vibebrowser/mux/errdefs"
	"vibebrowser/mux/sys/atomicfile"
	"vibebrowser/state"
)

// Host is this manager as one host of a cluster (SPEC §19): its engine (an embedded NATS node, or a
// connection to an existing cluster), its heartbeat, its view of the placement, and the leases of the stores
// whose browsers it runs. In single-host mode the manager has none.
type Host struct {
	host      string
	log       zerolog.Logger
	node      *cluster.Node // nil with VIBE_CLUSTER
	conn      *cluster.Conn
	hosts     *cluster.Hosts
	placement *cluster.Placement
	leases    *cluster.Leases
	dialer    *cluster.DoorDialer // to other hosts' doors
	stopAsks  func()              // ends the answers to other hosts' questions
	stores    *cluster.Stores     // the cluster's stores (the manager's clusterstores.go follows them)
	db        *state.DB
	fleet     *browsers.Fleet
	note      func(level zerolog.Level, kind, key string, ev api.Event)
	browsers  func(ctx context.Context) ([]api.Browser, error) // Config.Browsers
	pane      *pane                                            // the other hosts' answers (pane.go)
	arrivals  *arrivals                                        // what the stores' hosts send back about this host's tasks (keep.go)

	movesMu sync.Mutex
	moves   map[string]*moving // the stores moving away from this host now, by id

	stepsMu sync.Mutex             // guards steps
	steps   map[stepsTo]*stepQueue // the steps of other hosts' clients on their way there (steps.go)

	runCtx context.Context // the host's life: its loops and its deliveries end with it
	stop   context.CancelFunc
	wg     sync.WaitGroup
	workMu sync.Mutex // guards closed, and wg's additions once running (spawn)
	closed bool
}

// KeeperOrphanStop is how long a browser's keeper keeps it once its manager is gone, in a cluster. The
// manager's last lease renewal that got through was at most the leases' stopAfter (TTL/2) before its death,
// and another host takes the store no sooner than a TTL after that renewal: the keeper's wait (2.5 s) and its
// stop (Browser.close for 1 s at most, then SIGKILL of the group) fit in the other half (5 s). A manager restarted
// within it adopts its browsers; one restarted later launches them again, from their checkpoints (SPEC §18).
const KeeperOrphanStop = cluster.DefaultLeaseTTL / 4

// clusterReadyWithin bounds the wait at start for the cluster's state: a cluster forming (its first hosts
// starting together) has no JetStream quorum until a majority of its nodes is up.
const clusterReadyWithin = 60 * time.Second

// Config is what a host needs of its manager.
type Config struct {
	Cfg  *config.Config
	Root zerolog.Logger // the daemon's root logger
	DB   *state.DB
	// Fleet runs the browsers: a store whose lease is lost is fenced in it, the stores it runs are the
	// heartbeat's, and another host's clients are served by its endpoints.
	Fleet *browsers.Fleet
	// Logins, when set, gets the cluster's copies of the stores' logins once joined.
	Logins *Logins
	// Note, when set, records an event (a store moved, a download not delivered).
	Note func(level zerolog.Level, kind, key string, ev api.Event)
	// Browsers, when set, are the browsers this host runs, as its status shows them: other hosts' status
	// and UI ask for them (pane.go).
	Browsers func(ctx context.Context) ([]api.Browser, error)
	// UI, when set, serves another host's connection through the door to this host's web UI, for a store's
	// pages shown there (SPEC §19 "One pane"); peer is the verified host. Nil: the UI is off, and refused.
	UI func(peer string, conn net.Conn) error
	// Keep keeps here what this host's tasks did on stores of other hosts (SPEC §19 "Routing").
	Keep Keep
}

// Start joins the cluster with this home's identity: it starts the embedded node (VIBE_CLUSTER_NODE) or
// connects to VIBE_CLUSTER, opens the cluster's state and starts the heartbeat, the placement's watch, the
// failover and the leases' renewal.
func Start(ctx context.Context, c Config) (*Host, error) {
	cfg := c.Cfg.Cluster
	log := c.Root.With().Str("component", "cluster").Logger()
	id, err := cluster.LoadIdentity(c.Cfg.Home)
	if err != nil {
		return nil, fmt.Errorf("%w (cluster mode needs this home joined: vibe-browser --home %s cluster join DIR --host %s)",
			err, c.Cfg.Home, cfg.Host)
	}
	if id.Host() != cfg.Host {
		return nil, fmt.Errorf("VIBE_HOST=%s but this home was joined as host %s: set VIBE_HOST=%s, or join again as %s",
			cfg.Host, id.Host(), id.Host(), cfg.Host)
	}
	instance, err := homeInstance(c.Cfg.Home)
	if err != nil {
		return nil, err
	}
	ch := &Host{host: cfg.Host, log: log, db: c.DB, fleet: c.Fleet, note: c.Note, browsers: c.Browsers, pane: newPane(),
		moves: map[string]*moving{}, steps: map[stepsTo]*stepQueue{}}
	ch.arrivals = &arrivals{host: cfg.Host, cfg: c.Cfg, db: c.DB, keep: c.Keep, runs: ch.runsOn, log: log}
	startCtx, cancel := context.WithTimeout(ctx, clusterReadyWithin)
	defer cancel()
	if cfg.Node != "" {
		if ch.node, err = cluster.StartNode(startCtx, cluster.NodeConfig{Identity: id, Listen: cfg.Node, Route: cfg.NodeRoute,
			Routes: cfg.Routes, Log: log}); err != nil {
			return nil, err
		}
	}
	if ch.conn, err = cluster.Connect(startCtx, cluster.ConnConfig{Node: ch.node, URLs: cfg.URLs, Creds: cfg.Creds, CA: cfg.CA,
		Identity: id, Log: log}); err != nil {
		ch.shutdownNode()
		return nil, err
	}
	nodes := len(cfg.Routes) + 1
	if ch.node == nil {
		nodes = len(cfg.URLs)
	}
	var b *cluster.Buckets
	if err := untilAnswered(startCtx, func(ctx context.Context) (err error) {
		b, err = cluster.OpenBuckets(ctx, ch.conn.JetStream(), nodes)
		return err
	}); err != nil {
		ch.conn.Close()
		ch.shutdownNode()
		return nil, fmt.Errorf("the cluster's state is not reachable within %s (is a majority of its nodes up?): %w",
			clusterReadyWithin, err)
	}
	if c.Logins != nil {
		var logins *cluster.Logins
		if err := untilAnswered(startCtx, func(ctx context.Context) (err error) {
			logins, err = cluster.OpenLogins(ctx, ch.conn.JetStream(), nodes, c.Cfg.SnapshotKeep)
			return err
		}); err != nil {
			ch.conn.Close()
			ch.shutdownNode()
			return nil, err
		}
		c.Logins.l.Store(logins)
	}
	ch.hosts = cluster.NewHosts(b.Hosts, cluster.HostsConfig{Log: log, Self: func() cluster.HostInfo {
		return cluster.HostInfo{Host: cfg.Host, Instance: instance, Advertise: cfg.Advertise, FreeMem: freeMemory(),
			Stores: running(c.Fleet)}
	}})
	if err := ch.hosts.Beat(startCtx); err != nil {
		ch.conn.Close()
		ch.shutdownNode()
		return nil, err
	}
	ch.placement = cluster.NewPlacement(b.Placement, ch.hosts, log)
	ch.stores = cluster.NewStores(b.Stores, id.Secret(), log)
	ch.leases = cluster.NewLeases(b.Leases, cluster.LeaseConfig{Host: cfg.Host, Log: log, Lost: c.Fleet.Fence})
	doorLn, err := net.Listen("tcp", cfg.Advertise)
	if err != nil {
		ch.conn.Close()
		ch.shutdownNode()
		return nil, fmt.Errorf("this host's door at VIBE_ADVERTISE=%s: %w", cfg.Advertise, err)
	}
	door := cluster.NewDoorServer(doorLn, id.ServerTLS(), cluster.PeerHost, ch.handDoor(c.Fleet.ServeRemote), log)
	if c.UI != nil {
		door.ServeUI(ch.handUI(c.UI))
	}
	ch.handleExchanges(door)
	ch.dialer = cluster.NewDoorDialer(id.ClientTLS(), log)
	if ch.stopAsks, err = ch.answer(map[string]func(context.Context, []byte) (any, error){askEnsure: ch.answerEnsure,
		askMove: ch.answerMove, askMoved: ch.answerMoved, askBrowsers: ch.answerBrowsers}); err != nil {
		doorLn.Close()
		ch.conn.Close()
		ch.shutdownNode()
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	ch.runCtx, ch.stop = runCtx, stop
	ch.wg.Go(func() {
		if err := door.Serve(runCtx); err != nil {
			log.Error().Err(err).Msg("this host's door stopped")
		}
	})
	ch.wg.Go(func() { ch.hosts.Run(runCtx) })
	ch.wg.Go(func() { ch.placement.Run(runCtx) })
	ch.wg.Go(func() { ch.placement.RunFailover(runCtx, cfg.Host) })
	ch.wg.Go(func() { ch.leases.Run(runCtx) })
	ch.wg.Go(func() { ch.observeLeases(runCtx) })
	log.Info().Str("host", cfg.Host).Bool("node", ch.node != nil).Str("advertise", cfg.Advertise).Msg("joined the cluster")
	return ch, nil
}

// MayRun is the fleet's MayRun hook (SPEC §19 "Placement, exactly one"): a store's browser runs here only
// while this host holds its lease. A store not placed yet is placed here (it was added on this host); a store
// placed elsewhere is refused, naming its host. The web browser is each host's own.
func (ch *Host) MayRun(ctx context.Context, sp browsers.Spec) error {
	if sp.Key == api.WebKey {
		return nil
	}
	if err := ch.refuseMoving(sp); err != nil {
		return err
	}
	if ch.leases.Holds(sp.Key) {
		return nil
	}
	host, _, err := ch.placement.Lookup(ctx, sp.Key) // the cluster's word, not this host's view of it
	switch {
	case errors.Is(err, cluster.ErrNotPlaced):
		if host, err = ch.placement.Place(ctx, sp.Key, ch.host); err != nil {
			var placed *cluster.PlacedError
			if !errors.As(err, &placed) {
				return fmt.Errorf("%w: place %s on this host: %v", errdefs.ErrUnavailable, sp.Name, err)
			}
			host = placed.Host
		}
	case err != nil:
		return fmt.Errorf("%w: where %s runs: %v", errdefs.ErrUnavailable, sp.Name, err)
	}
	if host != ch.host {
		return fmt.Errorf("%w: %s is placed on host %s, not on this host (%s)", errdefs.ErrConflict, sp.Name, host, ch.host)
	}
	for {
		err := ch.leases.Acquire(ctx, sp.Key)
		var held *cluster.HeldError
		switch {
		case err == nil:
			return nil
		case errors.As(err, &held) && ch.hosts.Dead(held.Host):
			// A store failed over from a dead host: its lease lapses within the TTL, and the client waits for it.
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %v", errdefs.ErrConflict, err)
			case <-time.After(min(held.Left, time.Second) + 50*time.Millisecond):
			}
		case errors.As(err, &held):
			return fmt.Errorf("%w: %v", errdefs.ErrConflict, err)
		default:
			return fmt.Errorf("%w: the lease of %s: %v", errdefs.ErrUnavailable, sp.Name, err)
		}
	}
}

// observeEvery is how often this host reads every lease: a store failed over to it is taken one lease TTL
// after its dead host's last renewal, not one TTL after its first ensure here.
const observeEvery = 2 * time.Second

// observeLeases notes the revision of every lease until ctx ends (cluster.Leases.Observe).
func (ch *Host) observeLeases(ctx context.Context) {
	cluster.Every(ctx, observeEvery, func(ctx context.Context) {
		octx, cancel := context.WithTimeout(ctx, observeEvery)
		defer cancel()
		if err := ch.leases.Observe(octx); err != nil {
			ch.log.Debug().Err(err).Msg("observe the leases")
		}
	})
}

// running lists the stores whose browsers run here, for the heartbeat.
func running(f *browsers.Fleet) []string {
	var out []string
	for _, in := range f.Running() {
		if key := in.Spec().Key; key != api.WebKey {
			out = append(out, key)
		}
	}
	return out
}

// answer answers other hosts' questions of each kind with its handler; stop ends them all.
func (ch *Host) answer(handlers map[string]func(context.Context, []byte) (any, error)) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for _, s := range stops {
			s()
		}
	}
	for kind, handle := range handlers {
		s, err := ch.conn.Answer(ch.host, kind, handle)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, s)
	}
	return stop, nil
}

// ensured is the answer of a routed ensure: the host whose browser is ready (another than the one asked when
// the store moved meanwhile).
type ensured struct {
	api.EnsureResponse
	Host string `json:"host,omitempty"`
}

// answerEnsure answers another host's routed ensure: it waits while the store moves away from here, and
// asks the store's new host when it moved.
func (ch *Host) answerEnsure(ctx context.Context, q []byte) (any, error) {
	var req api.EnsureRequest
	if err := json.Unmarshal(q, &req); err != nil {
		return nil, err
	}
	if err := ch.AwaitMove(ctx, req.StoreID); err != nil {
		return nil, err
	}
	if _, elsewhere := ch.Elsewhere(req.StoreID); elsewhere {
		// Moved away (this host's view): the cluster's word decides, so that two hosts never pass it back
		// and forth.
		host, err := ch.placement.Refresh(ctx, req.StoreID)
		if err != nil {
			return nil, err
		}
		if host != ch.host {
			return ch.askEnsure(ctx, host, req)
		}
	}
	resp, err := ensureHere(ctx, ch.db, ch.fleet, req)
	return ensured{EnsureResponse: resp, Host: ch.host}, err
}

// ensureHere is the store's host's half of an ensure another host routed: the store's browser made ready
// here for the client; the task, its lease and its timeline are the asking host's.
func ensureHere(ctx context.Context, db *state.DB, fleet *browsers.Fleet, req api.EnsureRequest) (api.EnsureResponse, error) {
	if req.Kind != api.KindStore || req.TaskID != "" || !clientid.Valid(req.ClientID) {
		return api.EnsureResponse{}, fmt.Errorf("%w: a routed ensure names a store and a client, and no task", errdefs.ErrInvalid)
	}
	// A store just added on the asking host may not have reached this host's state yet (the stores' follower).
	s, err := db.GetStore(ctx, req.StoreID)
	for wait := time.Now().Add(storeArrivesWithin); errors.Is(err, errdefs.ErrNotFound) && time.Now().Before(wait); {
		select {
		case <-ctx.Done():
			return api.EnsureResponse{}, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		s, err = db.GetStore(ctx, req.StoreID)
	}
	if err != nil {
		return api.EnsureResponse{}, err
	}
	sp, err := browsers.StoreSpec(s)
	if err != nil {
		return api.EnsureResponse{}, err
	}
	if _, err := fleet.Ensure(ctx, sp); err != nil {
		return api.EnsureResponse{}, err
	}
	return api.EnsureResponse{}, nil
}

// storeArrivesWithin is how long a routed ensure waits for its store to reach this host's state.
const storeArrivesWithin = 10 * time.Second

// untilAnswered calls open with short attempts until it succeeds or ctx ends, and returns the last error: a
// JetStream request sent while the cluster has no meta leader (it is forming, or electing) gets no answer.
func untilAnswered(ctx context.Context, open func(context.Context) error) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := open(attempt)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// askEnsure is the question of an ensure routed to a store's host.
const askEnsure = "ensure"

// handDoor is the door's HandFunc: a connection for a store placed on this host goes to its endpoint, which
// learns the peer's name from the door (verified by its certificate), never from the connection.
func (ch *Host) handDoor(serve func(store, peer string, conn net.Conn) error) cluster.HandFunc {
	return func(peer, store string) (func(net.Conn), error) {
		if h := ch.Where(store); h != ch.host {
			return nil, fmt.Errorf("store %s is not placed on host %s", store, ch.host)
		}
		return func(conn net.Conn) {
			if err := serve(store, peer, conn); err != nil {
				ch.log.Warn().Err(err).Str("store", store).Str("from", peer).Msg("door: a connection not served")
				conn.Close()
			}
		}, nil
	}
}

// Elsewhere reports the host a store runs on when it is not this one ("" and false: here, or not placed).
//
// The answer is this host's view of the placement; when that names a host that is not alive, the placement
// may have moved (a failover) while this host's watch of it lagged, and the cluster is asked.
func (ch *Host) Elsewhere(store string) (string, bool) {
	h := ch.Where(store)
	if h != "" && h != ch.host && !ch.hosts.Alive(h) {
		ctx, cancel := context.WithTimeout(context.Background(), refreshBound)
		if fresh, err := ch.placement.Refresh(ctx, store); err == nil {
			h = fresh
		}
		cancel()
	}
	return h, h != "" && h != ch.host
}

// refreshBound bounds Elsewhere's question to the cluster.
const refreshBound = 2 * time.Second

// Remote is the fleet's Remote hook: a store placed on another host is reached through that host's door.
func (ch *Host) Remote(key string) (func(context.Context) (net.Conn, error), bool) {
	host, elsewhere := ch.Elsewhere(key)
	if !elsewhere {
		return nil, false
	}
	return func(ctx context.Context) (net.Conn, error) {
		addr := ch.advertise(host)
		if addr == "" {
			return nil, fmt.Errorf("host %s has no door known (is it alive?)", host)
		}
		return ch.dialer.Dial(ctx, host, addr, key)
	}, true
}

// advertise is host's door, as its heartbeat says, "" when unknown.
func (ch *Host) advertise(host string) string {
	for _, h := range ch.hosts.View() {
		if h.Host == host {
			return h.Advertise
		}
	}
	return ""
}

// AskEnsure asks the store's host to make its browser ready for req's client (the routed half of ensure).
func (ch *Host) AskEnsure(ctx context.Context, host string, req api.EnsureRequest) (api.EnsureResponse, error) {
	resp, err := ch.askEnsure(ctx, host, req)
	if err == nil && resp.Host != "" && resp.Host != host {
		// The store moved: this host's view of its placement is taken from the cluster now, so that the
		// client's connection goes to the new host's door.
		if _, err := ch.placement.Refresh(ctx, req.StoreID); err != nil {
			ch.log.Debug().Err(err).Str("store", req.StoreID).Msg("a moved store's placement is not read yet")
		}
	}
	return resp.EnsureResponse, err
}

func (ch *Host) askEnsure(ctx context.Context, host string, req api.EnsureRequest) (ensured, error) {
	var resp ensured
	if err := ch.conn.Ask(ctx, host, askEnsure, req, &resp); err != nil {
		var refused *cluster.RefusedError
		if errors.As(err, &refused) {
			return ensured{}, fmt.Errorf("%w: %v", errdefs.ErrUnavailable, err)
		}
		return ensured{}, fmt.Errorf("%w: the store runs on host %s: %v", errdefs.ErrUnavailable, host, err)
	}
	if resp.Host == "" {
		resp.Host = host
	}
	return resp, nil
}

// Stores are the cluster's stores.
func (ch *Host) Stores() *cluster.Stores { return ch.stores }

// Name is this host's name.
func (ch *Host) Name() string { return ch.host }

// ReleaseAll gives back every lease this host holds: its browsers have all stopped (the manager quits).
func (ch *Host) ReleaseAll(ctx context.Context) {
	for _, store := range ch.leases.Held() {
		ch.released(ctx, store)
	}
}

// released gives the lease of a store whose browser stopped cleanly here back, so that a move need not wait.
func (ch *Host) released(ctx context.Context, store string) {
	if err := ch.leases.Release(ctx, store); err != nil {
		ch.log.Warn().Err(err).Str("store", store).Msg("give a lease back")
	}
}

// Forget removes what the cluster keeps of a store removed here: its lease, its placement and its logins'
// copies. A failure is logged: the store is gone from this host either way.
func (ch *Host) Forget(ctx context.Context, store string, logins *Logins) {
	ch.released(ctx, store)
	if err := ch.placement.Remove(ctx, store); err != nil {
		ch.log.Warn().Err(err).Str("store", store).Msg("forget a removed store's placement")
	}
	if l := logins.l.Load(); l != nil {
		if err := l.Forget(ctx, store); err != nil {
			ch.log.Warn().Err(err).Str("store", store).Msg("forget a removed store's login copies")
		}
	}
}

// Where is the host a store is placed on, "" when it is not placed yet.
func (ch *Host) Where(store string) string {
	h, _ := ch.placement.Where(store)
	return h
}

// Close leaves the cluster: the loops end, the connection closes and the embedded node stops. The leases
// still held are not released: their browsers were left running for the next manager, or already stopped.
func (ch *Host) Close() {
	ch.stopAsks()
	ch.pane.close()
	ch.workMu.Lock()
	ch.closed = true // no work spawned after this (deliveries, steps, faults)
	ch.workMu.Unlock()
	ch.stop()
	ch.wg.Wait()
	ch.dialer.Close()
	ch.conn.Close()
	ch.shutdownNode()
}

func (ch *Host) shutdownNode() {
	if ch.node != nil {
		ch.node.Shutdown()
	}
}

// homeInstance is this home's id in the cluster's heartbeats, made once: two homes joined under one host name
// are told apart by it, and a restarted manager of the same home is not.
func homeInstance(home string) (string, error) {
	path := filepath.Join(home, cluster.HomeDir, "instance")
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) == 32 {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	id := hex.EncodeToString(raw[:])
	if err := atomicfile.Write(path, []byte(id+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("this home's cluster instance id: %w", err)
	}
	return id, nil
}

// freeMemory is the memory available for more browsers (MemAvailable of /proc/meminfo), 0 when unknown.
func freeMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemAvailable:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
