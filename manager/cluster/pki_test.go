package cluster_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/cluster"
	"vibebrowser/manager/cluster/hostname"
)

// initCA makes a CA in a temp dir.
func initCA(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	if err := cluster.Init(dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// joined is a home joined as host to the CA in dir, with its identity loaded.
func joined(t *testing.T, dir, host string) (string, *cluster.Identity) {
	t.Helper()
	home := filepath.Join(t.TempDir(), "home")
	if err := cluster.Join(dir, home, host, ""); err != nil {
		t.Fatal(err)
	}
	id, err := cluster.LoadIdentity(home)
	if err != nil {
		t.Fatal(err)
	}
	return home, id
}

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want || fi.Mode().Type() != 0 && !fi.IsDir() {
		t.Errorf("%s: mode %v; want %v (a regular file or folder)", path, fi.Mode(), want)
	}
}

func TestInitMakesThePrivateCAOnce(t *testing.T) {
	dir := initCA(t)
	wantMode(t, dir, 0o700)
	wantMode(t, filepath.Join(dir, cluster.CAKeyFile), 0o600)
	wantMode(t, filepath.Join(dir, cluster.SecretFile), 0o600)
	before, _ := os.ReadFile(filepath.Join(dir, cluster.CAKeyFile))
	err := cluster.Init(dir)
	if err == nil || !strings.Contains(err.Error(), "never overwritten") {
		t.Errorf("Init(%q) again = %v; want a refusal saying a CA is never overwritten", dir, err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, cluster.CAKeyFile)); !bytes.Equal(before, after) {
		t.Error("a second Init changed the CA's key")
	}
	for _, name := range []string{cluster.CAFile, cluster.CAKeyFile, cluster.SecretFile} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Symlink("/nonexistent", filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			if err := cluster.Init(dir); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("Init of a dir holding %s = %v; want a refusal naming it", name, err)
			}
		})
	}
}

func TestJoinWritesAHostCertificate(t *testing.T) {
	dir := initCA(t)
	home := filepath.Join(t.TempDir(), "home")
	if err := cluster.Join(dir, home, "host1", "10.1.2.3:9500"); err != nil {
		t.Fatal(err)
	}
	cdir := filepath.Join(home, cluster.HomeDir)
	wantMode(t, cdir, 0o700)
	wantMode(t, filepath.Join(cdir, cluster.HostKeyFile), 0o600)
	wantMode(t, filepath.Join(cdir, cluster.SecretFile), 0o600)
	caSecret, _ := os.ReadFile(filepath.Join(dir, cluster.SecretFile))
	if hostSecret, _ := os.ReadFile(filepath.Join(cdir, cluster.SecretFile)); !bytes.Equal(caSecret, hostSecret) {
		t.Error("the home's secret is not the cluster's")
	}

	leaf := readCert(t, filepath.Join(cdir, cluster.HostCertFile))
	roots := x509.NewCertPool()
	roots.AddCert(readCert(t, filepath.Join(dir, cluster.CAFile)))
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("host certificate for usage %v: %v", usage, err)
		}
	}
	for _, name := range []string{"host1", "localhost", "127.0.0.1", "::1", "10.1.2.3"} {
		if err := leaf.VerifyHostname(name); err != nil {
			t.Errorf("host certificate does not name %s: %v", name, err)
		}
	}
	if leaf.Subject.CommonName != "host1" {
		t.Errorf("CN = %q; want host1", leaf.Subject.CommonName)
	}
	if years := leaf.NotAfter.Sub(time.Now()).Hours() / 24 / 365; years < 4.9 || years > 5.1 {
		t.Errorf("host certificate valid %.1f years; want 5", years)
	}
	id, err := cluster.LoadIdentity(home)
	if err != nil || id.Host() != "host1" {
		t.Fatalf("LoadIdentity = %v, %v; want host1", id, err)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s holds no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestJoinRefusesBadNames(t *testing.T) {
	dir := initCA(t)
	tests := []struct {
		host, advertise string
		ok              bool
		want            string
	}{
		{"host1", "", true, ""},
		{"Shop-Box.example", "shop-box.example:9500", true, ""},
		{strings.Repeat("a", 63), "[fd00::1]:9500", true, ""},
		{"", "", false, hostname.Rule},
		{"-host", "", false, hostname.Rule},
		{".host", "", false, hostname.Rule},
		{"my host", "", false, hostname.Rule},
		{"my_host", "", false, hostname.Rule},
		{"a/b", "", false, hostname.Rule},
		{"hôte", "", false, hostname.Rule},
		{strings.Repeat("a", 64), "", false, hostname.Rule},
		{"host1", "10.0.0.1", false, "want host:port"},
		{"host1", ":9500", false, "want host:port"},
		{"host1", "10.0.0.1:0", false, "want host:port"},
	}
	for _, tt := range tests {
		t.Run(tt.host+"@"+tt.advertise, func(t *testing.T) {
			err := cluster.Join(dir, t.TempDir(), tt.host, tt.advertise)
			if tt.ok && err != nil || !tt.ok && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Join(%q, %q) = %v; want ok=%v naming %q", tt.host, tt.advertise, err, tt.ok, tt.want)
			}
		})
	}
}

func TestJoinRefusesAHomeOfAnotherCA(t *testing.T) {
	ours, theirs := initCA(t), initCA(t)
	home, _ := joined(t, theirs, "host1")
	before, _ := os.ReadFile(filepath.Join(home, cluster.HomeDir, cluster.HostCertFile))
	err := cluster.Join(ours, home, "host1", "")
	if err == nil || !strings.Contains(err.Error(), "another cluster") {
		t.Errorf("Join of a home of another CA = %v; want a refusal naming another cluster", err)
	}
	if after, _ := os.ReadFile(filepath.Join(home, cluster.HomeDir, cluster.HostCertFile)); !bytes.Equal(before, after) {
		t.Error("the refused join changed the home's certificate")
	}
}

// A second join replaces the certificate through a rename: a symlink planted at host.key is replaced, and
// the file it pointed to is left as it was.
func TestRejoinReplacesWithoutFollowingSymlinks(t *testing.T) {
	dir := initCA(t)
	home, _ := joined(t, dir, "host1")
	cdir := filepath.Join(home, cluster.HomeDir)
	before, _ := os.ReadFile(filepath.Join(cdir, cluster.HostCertFile))
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("untouched"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(cdir, cluster.HostKeyFile)
	if err := os.Remove(key); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, key); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Join(dir, home, "host1", ""); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "untouched" {
		t.Errorf("the symlink's target now holds %q; the join followed it", b)
	}
	wantMode(t, key, 0o600)
	if after, _ := os.ReadFile(filepath.Join(cdir, cluster.HostCertFile)); bytes.Equal(before, after) {
		t.Error("the second join kept the old certificate")
	}
	if _, err := cluster.LoadIdentity(home); err != nil {
		t.Errorf("LoadIdentity after a rejoin: %v", err)
	}
	entries, _ := os.ReadDir(cdir)
	if len(entries) != 4 {
		t.Errorf("%s holds %d entries; want ca.pem, host.pem, host.key and secret, no temp file", cdir, len(entries))
	}
}

// handshake runs a TLS handshake over loopback TCP and returns both ends' states and errors.
func handshake(t *testing.T, server, client *tls.Config) (srv, cli tls.ConnectionState, srvErr, cliErr error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		conn, err := ln.Accept()
		if err != nil {
			srvErr = err
			return
		}
		s := tls.Server(conn, server)
		s.SetDeadline(time.Now().Add(10 * time.Second))
		srvErr = s.Handshake()
		srv = s.ConnectionState()
		conn.Close()
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := tls.Client(conn, client)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if cliErr = c.Handshake(); cliErr == nil {
		// TLS 1.3: the client is done before the server has judged its certificate; a read shows the verdict.
		c.Read(make([]byte, 1))
	}
	conn.Close()
	<-done
	return srv, c.ConnectionState(), srvErr, cliErr
}

func TestPeerHostOnARealHandshake(t *testing.T) {
	dir, other := initCA(t), initCA(t)
	_, id1 := joined(t, dir, "host1")
	_, id2 := joined(t, dir, "host2")
	_, stranger := joined(t, other, "host3")

	client := id2.ClientTLS()
	client.ServerName = "host1"
	srv, cli, srvErr, cliErr := handshake(t, id1.ServerTLS(), client)
	if srvErr != nil || cliErr != nil {
		t.Fatalf("handshake host2 → host1: server %v, client %v", srvErr, cliErr)
	}
	if h, err := cluster.PeerHost(srv); h != "host2" || err != nil {
		t.Errorf("PeerHost(server side) = %q, %v; want host2", h, err)
	}
	if h, err := cluster.PeerHost(cli); h != "host1" || err != nil {
		t.Errorf("PeerHost(client side) = %q, %v; want host1", h, err)
	}
	if srv.Version != tls.VersionTLS13 {
		t.Errorf("TLS version %x; want 1.3", srv.Version)
	}

	refused := []struct {
		name   string
		client *tls.Config
	}{
		{"no certificate", &tls.Config{RootCAs: id2.CAPool(), ServerName: "host1"}},
		{"another CA's certificate", func() *tls.Config {
			c := stranger.ClientTLS()
			c.RootCAs, c.ServerName = id2.CAPool(), "host1"
			return c
		}()},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			srv, _, srvErr, _ := handshake(t, id1.ServerTLS(), tt.client)
			if srvErr == nil {
				t.Errorf("the server accepted a client with %s", tt.name)
			}
			if h, err := cluster.PeerHost(srv); err == nil {
				t.Errorf("PeerHost after a refused handshake = %q; want an error", h)
			}
		})
	}
	stray := stranger.ClientTLS()
	stray.ServerName = "host1"
	if _, _, _, cliErr := handshake(t, id1.ServerTLS(), stray); cliErr == nil {
		t.Error("a client of another CA accepted this cluster's server")
	}
	if _, err := cluster.PeerHost(tls.ConnectionState{}); err == nil {
		t.Error("PeerHost of no connection = nil error")
	}
}

func TestHostsShareTheSecret(t *testing.T) {
	dir := initCA(t)
	_, id1 := joined(t, dir, "host1")
	_, id2 := joined(t, dir, "host2")
	sealed := id1.Secret().Seal([]byte("proxy password"), "store:shop-a")
	plain, err := id2.Secret().Open(sealed, "store:shop-a")
	if err != nil || string(plain) != "proxy password" {
		t.Errorf("host2 opened host1's sealed text: %q, %v", plain, err)
	}
	if !slices.Contains([]string{id1.Host(), id2.Host()}, "host2") {
		t.Errorf("hosts %q and %q", id1.Host(), id2.Host())
	}
}

func TestLoadIdentityRefusesSecretsOthersCanRead(t *testing.T) {
	dir := initCA(t)
	for _, name := range []string{cluster.HostKeyFile, cluster.SecretFile} {
		t.Run(name, func(t *testing.T) {
			home, _ := joined(t, dir, "host1")
			path := filepath.Join(home, cluster.HomeDir, name)
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := cluster.LoadIdentity(home); err == nil || !strings.Contains(err.Error(), "chmod 600") {
				t.Errorf("LoadIdentity with %s 0644 = %v; want a refusal saying chmod 600", name, err)
			}
		})
	}
}
