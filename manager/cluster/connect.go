package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// ConnConfig says how a manager reaches the cluster's engine: its own embedded node (Node), or an existing
// NATS cluster (URLs, with Creds and CA). Either way the connection is TLS; a server without it is refused.
type ConnConfig struct {
	Node     *Node     // the embedded node to connect to; nil connects to URLs
	URLs     []string  // VIBE_CLUSTER: an existing cluster's servers, nats:// or tls://
	Creds    string    // VIBE_CLUSTER_CREDS: a NATS creds file; "" = none
	CA       string    // VIBE_CLUSTER_CA: the servers' CA (PEM); "" = the system's roots and the cluster's CA
	Identity *Identity // this host's; required with Node, its certificate presented with URLs when set
	Host     string    // the connection's name; "" = Identity's host
	Log      zerolog.Logger
}

// Conn is a manager's connection to the cluster's engine. It reconnects forever: a host cut off from the
// cluster learns it from its leases, never from a connection given up.
type Conn struct {
	nc *nats.Conn
	js jetstream.JetStream
}

// Reconnect pacing: short, since a host's leases depend on reaching the cluster; jittered, so a cluster's
// hosts do not all knock at once after a node restarts.
const (
	reconnectWait   = 250 * time.Millisecond
	reconnectJitter = 250 * time.Millisecond
	dialTimeout     = 2 * time.Second
)

// Connect connects to the cluster's engine and returns once connected, or ctx ends (each refused attempt is
// tried again; the error then is the last attempt's).
func Connect(ctx context.Context, cfg ConnConfig) (*Conn, error) {
	opts, urls, err := cfg.options()
	if err != nil {
		return nil, fmt.Errorf("connect to the cluster: %w", err)
	}
	t := time.NewTicker(reconnectWait)
	defer t.Stop()
	for {
		nc, err := nats.Connect(urls, opts...)
		if err == nil {
			js, err := jetstream.New(nc)
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("connect to the cluster: %w", err)
			}
			return &Conn{nc: nc, js: js}, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to the cluster at %s (%w): %w", urls, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// options are the connection's options and its servers' URLs.
func (cfg ConnConfig) options() ([]nats.Option, string, error) {
	name := cfg.Host
	if name == "" && cfg.Identity != nil {
		name = cfg.Identity.host
	}
	log := cfg.Log.With().Str("cluster", "nats").Logger()
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(reconnectWait),
		nats.ReconnectJitter(reconnectJitter, reconnectJitter),
		nats.Timeout(dialTimeout),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil { // nil: closed by us
				log.Warn().Err(err).Msg("disconnected from the cluster; reconnecting")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info().Str("server", nc.ConnectedUrlRedacted()).Msg("reconnected to the cluster")
		}),
		nats.ErrorHandler(func(nc *nats.Conn, sub *nats.Subscription, err error) {
			log.Error().Err(err).Msg("cluster connection")
		}),
	}
	if cfg.Node != nil {
		if cfg.Identity == nil {
			return nil, "", errors.New("no cluster identity to present to the NATS node")
		}
		// The node is this host's own: its certificate names this host, whatever address it listens on.
		tc := cfg.Identity.ClientTLS()
		tc.ServerName = cfg.Identity.host
		return append(opts, nats.Secure(tc)), cfg.Node.ClientURL(), nil
	}
	if len(cfg.URLs) == 0 {
		return nil, "", errors.New("no NATS node and no VIBE_CLUSTER servers")
	}
	// TLS always, whatever the URLs' scheme (nats.go upgrades a nats:// connection): the cluster's traffic
	// crosses machines, and a server that offers no TLS is refused rather than spoken to in the clear.
	tc := &tls.Config{}
	if cfg.Identity != nil {
		tc = cfg.Identity.ClientTLS()
	}
	tc.MinVersion = tls.VersionTLS12 // an existing cluster's servers may not speak 1.3
	roots, err := clusterRoots(cfg.CA, cfg.Identity)
	if err != nil {
		return nil, "", err
	}
	tc.RootCAs = roots
	opts = append(opts, nats.Secure(tc))
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	return opts, strings.Join(cfg.URLs, ","), nil
}

// clusterRoots is what an existing cluster's servers are verified against: VIBE_CLUSTER_CA's certificates
// when set, else the system's roots and, when this home joined a cluster, its CA.
func clusterRoots(caFile string, id *Identity) (*x509.CertPool, error) {
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("VIBE_CLUSTER_CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("VIBE_CLUSTER_CA=%s holds no PEM certificate", caFile)
		}
		return pool, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if id != nil {
		pool.AppendCertsFromPEM(id.caPEM)
	}
	return pool, nil
}

// NATS is the connection, for request/reply.
func (c *Conn) NATS() *nats.Conn { return c.nc }

// JetStream is the connection's JetStream context, for the cluster's KV and object stores.
func (c *Conn) JetStream() jetstream.JetStream { return c.js }

// Close closes the connection.
func (c *Conn) Close() { c.nc.Close() }
