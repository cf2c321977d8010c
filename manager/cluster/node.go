package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/rs/zerolog"
)

// ClusterName is the NATS cluster name of every embedded node.
const ClusterName = "vibe"

// jetStreamDir is the folder under $home/cluster where the embedded node keeps JetStream's data.
const jetStreamDir = "jetstream"

// tlsTimeout bounds a TLS handshake on the node's listeners, in seconds (the server's unit).
const tlsTimeout = 5

// startPoll is how often StartNode and WaitJetStream look again: short next to a start's second or two.
const startPoll = 20 * time.Millisecond

// NodeConfig is what an embedded NATS node needs (SPEC §19 "Modes": VIBE_CLUSTER_NODE and its neighbours).
type NodeConfig struct {
	Identity *Identity      // this host's certificate and the cluster's CA; the node is named for its host
	Listen   string         // VIBE_CLUSTER_NODE: host:port of the client listener (port 0: any free port)
	Route    string         // VIBE_CLUSTER_NODE_ROUTE: host:port of the route listener (port 0: any free port)
	Routes   []string       // VIBE_CLUSTER_ROUTES: the other nodes, nats-route://host:port; none: a node on its own
	Log      zerolog.Logger // the server's warnings and errors; its notices too when the level is debug
}

// Node is an embedded NATS server with JetStream, one node of the cluster's engine. Each of its listeners
// speaks TLS only and takes a client or a route only with a certificate of the cluster's CA; it has no
// monitoring port and leaves the process's signals to the manager.
type Node struct {
	srv    *server.Server
	host   string
	client string // the client listener's URL
	route  string // the route listener's URL; "" for a node on its own
}

// StartNode starts the embedded node and returns once its listeners accept, or ctx ends. It does not wait for
// the cluster to form: see WaitJetStream. With no routes the node runs JetStream on its own and opens no
// route listener: NATS forms a clustered JetStream only over configured routes.
func StartNode(ctx context.Context, cfg NodeConfig) (*Node, error) {
	opts, err := cfg.options()
	if err != nil {
		return nil, fmt.Errorf("start the NATS node: %w", err)
	}
	if err := privateDir(opts.StoreDir); err != nil {
		return nil, fmt.Errorf("start the NATS node: %w", err)
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("start the NATS node: %w", err)
	}
	nl := &natsLog{log: cfg.Log}
	srv.SetLoggerV2(nl, cfg.Log.Debug().Enabled(), false, false)
	srv.Start() // returns at once; the server's goroutines are its own, ended by Shutdown
	n := &Node{srv: srv, host: opts.ServerName}
	for !srv.ReadyForConnections(startPoll) {
		err := ctx.Err()
		if msg := nl.lastFatal(); msg != "" {
			err = errors.New(msg)
		}
		if err != nil {
			n.Shutdown()
			return nil, fmt.Errorf("start the NATS node: %w", err)
		}
	}
	if msg := nl.lastFatal(); msg != "" { // JetStream did not start, say; the listeners did
		n.Shutdown()
		return nil, fmt.Errorf("start the NATS node: %s", msg)
	}
	n.client = "tls://" + reachable(srv.Addr())
	if addr := srv.ClusterAddr(); addr != nil {
		n.route = "nats-route://" + reachable(addr)
	}
	return n, nil
}

// options are the server's options for cfg.
func (cfg NodeConfig) options() (*server.Options, error) {
	if cfg.Identity == nil {
		return nil, errors.New("no cluster identity (vibe-browser cluster join)")
	}
	host, port, err := splitListen("VIBE_CLUSTER_NODE", cfg.Listen)
	if err != nil {
		return nil, err
	}
	opts := &server.Options{
		ServerName: cfg.Identity.host,
		Host:       host,
		Port:       port,
		TLS:        true,
		TLSVerify:  true,
		TLSConfig:  cfg.Identity.ServerTLS(),
		TLSTimeout: tlsTimeout,
		JetStream:  true,
		StoreDir:   filepath.Join(cfg.Identity.dir, jetStreamDir),
		NoSigs:     true,
		// The server's own start-up banner would go to our log at info level for every start.
		DisableJetStreamBanner: true,
	}
	if len(cfg.Routes) == 0 {
		return opts, nil
	}
	routeHost, routePort, err := splitListen("VIBE_CLUSTER_NODE_ROUTE", cfg.Route)
	if err != nil {
		return nil, err
	}
	for _, r := range cfg.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats-route" || u.Hostname() == "" || u.Port() == "" {
			return nil, fmt.Errorf("VIBE_CLUSTER_ROUTES: %q: want nats-route://host:port", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	opts.Cluster = server.ClusterOpts{
		Name:       ClusterName,
		Host:       routeHost,
		Port:       routePort,
		TLSConfig:  cfg.Identity.peerTLS(),
		TLSTimeout: tlsTimeout,
		// The node's clients are its own manager, and a manager that reaches the cluster through one node
		// (VIBE_CLUSTER) is told of no other: a host cut off from the nodes it was given is cut off, and its
		// leases say so, rather than slipping round to a node it was never meant to use.
		NoAdvertise: true,
	}
	return opts, nil
}

// splitListen reads a listen address; port 0 is any free port (the server's RANDOM_PORT).
func splitListen(knob, addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(p)
	if err != nil || perr != nil || n < 0 || n > 65535 {
		return "", 0, fmt.Errorf("%s=%q: want host:port", knob, addr)
	}
	if n == 0 {
		n = server.RANDOM_PORT
	}
	return h, n, nil
}

// reachable is addr as this machine dials it: an unspecified address becomes the loopback.
func reachable(addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return addr.String()
	}
	ip := tcp.IP
	if ip == nil || ip.IsUnspecified() {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(tcp.Port))
}

// ClientURL is where this machine's clients reach the node (tls://host:port).
func (n *Node) ClientURL() string { return n.client }

// RouteURL is where other nodes reach this one's routes (nats-route://host:port), as this machine dials it;
// "" for a node on its own.
func (n *Node) RouteURL() string { return n.route }

// Host is the node's name: its host's.
func (n *Node) Host() string { return n.host }

// Shutdown stops the node and waits until it has.
func (n *Node) Shutdown() {
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}

// RoutedHosts is the names of the nodes this one has a route with, sorted.
func (n *Node) RoutedHosts() []string {
	rz, err := n.srv.Routez(nil)
	if err != nil {
		return nil
	}
	var hosts []string
	for _, r := range rz.Routes {
		if r.RemoteName != "" && !slices.Contains(hosts, r.RemoteName) {
			hosts = append(hosts, r.RemoteName)
		}
	}
	slices.Sort(hosts)
	return hosts
}

// ClusterPeers is the names of the JetStream peers that this node, as the meta leader, counts online with
// current stats (itself included), sorted: the hosts a replicated stream can be placed on. It is nil on a
// node that is not the meta leader, and the node itself on a node on its own.
func (n *Node) ClusterPeers() []string {
	if !n.srv.JetStreamIsClustered() { // the server's JetStreamClusterPeers panics when not clustered
		if n.srv.JetStreamEnabled() {
			return []string{n.host}
		}
		return nil
	}
	peers := n.srv.JetStreamClusterPeers()
	slices.Sort(peers)
	return peers
}

// WaitJetStream returns once JetStream is up on this node and its cluster has a meta leader (the cluster
// formed), or ctx ends.
func (n *Node) WaitJetStream(ctx context.Context) error {
	t := time.NewTicker(startPoll)
	defer t.Stop()
	for !n.jetStreamReady() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for JetStream's meta leader on %s: %w", n.host, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}

func (n *Node) jetStreamReady() bool {
	if !n.srv.JetStreamEnabled() {
		return false
	}
	if !n.srv.JetStreamIsClustered() {
		return true
	}
	jsz, err := n.srv.Jsz(nil)
	return err == nil && jsz.Meta != nil && jsz.Meta.Leader != ""
}
