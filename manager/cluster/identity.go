package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"vibebrowser/manager/cluster/hostname"
	"vibebrowser/manager/seal"
)

// Identity is a joined host's place in the cluster, read from $home/cluster/: its certificate and key, the
// cluster's CA and the cluster's secret.
type Identity struct {
	dir    string // $home/cluster
	host   string
	cert   tls.Certificate
	pool   *x509.CertPool
	caPEM  []byte
	secret *seal.Key
}

// LoadIdentity reads home's cluster identity (written by Join) and checks that the host certificate is the
// CA's and is valid now.
func LoadIdentity(home string) (*Identity, error) {
	dir := filepath.Join(home, HomeDir)
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, fmt.Errorf("cluster identity (made by vibe-browser cluster join): %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cluster identity: %s holds no certificate", filepath.Join(dir, CAFile))
	}
	for _, name := range []string{HostKeyFile, SecretFile} {
		// Like ssh with a private key: a secret others can read is no longer this host's alone.
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil && fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("cluster identity: %s is open to other users (mode %04o): chmod 600 it",
				filepath.Join(dir, name), fi.Mode().Perm())
		}
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, HostCertFile), filepath.Join(dir, HostKeyFile))
	if err != nil {
		return nil, fmt.Errorf("cluster identity: %w", err)
	}
	_, err = cert.Leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	if err != nil {
		return nil, fmt.Errorf("cluster identity: %s is not valid under the cluster CA (join again): %w",
			filepath.Join(dir, HostCertFile), err)
	}
	if err := hostname.Check(cert.Leaf.Subject.CommonName); err != nil {
		return nil, fmt.Errorf("cluster identity: %w", err)
	}
	raw, err := readSecret(filepath.Join(dir, SecretFile))
	if err != nil {
		return nil, fmt.Errorf("cluster identity: %w", err)
	}
	secret, err := seal.NewKey(raw)
	if err != nil {
		return nil, fmt.Errorf("cluster identity: %w", err)
	}
	return &Identity{dir: dir, host: cert.Leaf.Subject.CommonName, cert: cert, pool: pool, caPEM: caPEM, secret: secret}, nil
}

// Host is this host's name, its certificate's CN.
func (id *Identity) Host() string { return id.host }

// Secret is the cluster's secret, which seals what the cluster keeps for every host (store tokens, proxy
// credentials, snapshots).
func (id *Identity) Secret() *seal.Key { return id.secret }

// CAPool is the cluster's CA as a pool, the only root its certificates are verified against.
func (id *Identity) CAPool() *x509.CertPool { return id.pool.Clone() }

// ServerTLS is the TLS configuration of a listener of this host's (its NATS node, its door): TLS 1.3, this
// host's certificate, and a client certificate from the cluster CA required and verified.
func (id *Identity) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    id.pool.Clone(),
	}
}

// ClientTLS is the TLS configuration of this host dialling another's listener: TLS 1.3, the server verified
// against the cluster CA, this host's certificate presented.
func (id *Identity) ClientTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{id.cert},
		RootCAs:      id.pool.Clone(),
	}
}

// peerTLS is both at once, for a NATS route: the node accepts routes with it and dials them with it. A node
// dialled is verified as memberName, which every member's certificate lists, not as the route URL's host:
// operators name routes by whatever address reaches a node (an IP its certificate may not list), and the
// route's own name check stays on (the server warns against turning it off, rightly).
func (id *Identity) peerTLS() *tls.Config {
	c := id.ServerTLS()
	c.RootCAs = id.pool.Clone()
	c.ServerName = memberName
	return c
}

// PeerHost is the host name of the peer of a verified TLS connection (its certificate's CN), for the door
// and the node to know who connects. It refuses a connection whose peer presented no verified certificate.
func PeerHost(state tls.ConnectionState) (string, error) {
	if !state.HandshakeComplete || len(state.VerifiedChains) == 0 || len(state.VerifiedChains[0]) == 0 {
		return "", errors.New("peer presented no certificate verified by the cluster CA")
	}
	cn := state.VerifiedChains[0][0].Subject.CommonName
	if err := hostname.Check(cn); err != nil {
		return "", fmt.Errorf("peer certificate: %w", err)
	}
	return cn, nil
}
