package cluster

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"vibebrowser/manager/cluster/hostname"
	"vibebrowser/mux/sys/atomicfile"
)

// The files of a cluster's CA directory (cluster init) and of a joined home's cluster/ folder (cluster join).
const (
	CAFile       = "ca.pem"
	CAKeyFile    = "ca.key"
	SecretFile   = "secret"
	HostCertFile = "host.pem"
	HostKeyFile  = "host.key"
	// HomeDir is the folder of a home that holds its cluster identity: ca.pem, host.pem, host.key, secret.
	HomeDir = "cluster"
)

const (
	secretLen    = 32
	caValidity   = 10 * 365 * 24 * time.Hour
	hostValidity = 5 * 365 * 24 * time.Hour
	clockSkew    = time.Hour // a certificate is valid from an hour ago, so a host whose clock lags a little accepts it
	// memberName is a DNS name every host certificate lists besides its host's, so that a node verifies a route
	// it dials as a member of the cluster whatever address the route names (.invalid: never a real domain).
	memberName = "member.vibe-cluster.invalid"
)

// Init makes a cluster's certificate authority and secret in dir (made 0700): ca.pem, ca.key (ECDSA P-256)
// and secret (32 random bytes, hex), keys 0600. It refuses a dir that holds any of them: every host's
// certificate hangs on the CA, so it is never overwritten.
func Init(dir string) error {
	for _, name := range []string{CAFile, CAKeyFile, SecretFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cluster init: %s already holds %s: a cluster's CA is made once and never overwritten "+
				"(every host's certificate hangs on it); give an empty directory", dir, name)
		}
	}
	if err := privateDir(dir); err != nil {
		return fmt.Errorf("cluster init: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("cluster init: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "vibe-browser cluster CA", Organization: []string{"vibe-browser"}},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("cluster init: %w", err)
	}
	keyPEM, err := keyPEM(key)
	if err != nil {
		return fmt.Errorf("cluster init: %w", err)
	}
	secret := make([]byte, secretLen)
	rand.Read(secret)
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{SecretFile, []byte(hex.EncodeToString(secret) + "\n"), 0o600},
		{CAKeyFile, keyPEM, 0o600},
		{CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644},
	}
	for i, f := range files {
		if err := writeNew(filepath.Join(dir, f.name), f.data, f.mode); err != nil {
			for _, done := range files[:i] {
				os.Remove(filepath.Join(dir, done.name)) // leave no half CA that blocks the next init
			}
			return fmt.Errorf("cluster init: %w", err)
		}
	}
	return atomicfile.SyncDir(dir)
}

// Join gives home a host certificate from the CA in dir: it writes $home/cluster/ (0700) with ca.pem, host.pem
// and host.key (ECDSA P-256, CN host, for server and client auth, valid 5 years) and the cluster's secret.
// advertise (host:port, or "") adds its host to the certificate's names, so that other hosts reach this one's
// door by it. Joining again with the same CA replaces the certificate; a home of another CA is refused.
func Join(dir, home, host, advertise string) error {
	if err := hostname.Check(host); err != nil {
		return fmt.Errorf("cluster join: %w", err)
	}
	var advertiseHost string
	if advertise != "" {
		h, port, err := net.SplitHostPort(advertise)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || h == "" || n < 1 || n > 65535 {
			return fmt.Errorf("cluster join: advertise address %q: want host:port (a name or IP other hosts reach, "+
				"a port from 1 to 65535)", advertise)
		}
		advertiseHost = h
	}
	ca, caKey, caPEM, err := loadCA(dir)
	if err != nil {
		return fmt.Errorf("cluster join: %w", err)
	}
	secret, err := readSecret(filepath.Join(dir, SecretFile))
	if err != nil {
		return fmt.Errorf("cluster join: %w", err)
	}
	cdir := filepath.Join(home, HomeDir)
	if old, err := os.ReadFile(filepath.Join(cdir, CAFile)); err == nil {
		if !bytes.Equal(pemDER(old), ca.Raw) {
			return fmt.Errorf("cluster join: %s belongs to another cluster (its %s is another CA's); a home joins one "+
				"cluster: move %s away to join this one", home, CAFile, cdir)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cluster join: %w", err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("cluster join: %w", err)
	}
	if err := privateDir(cdir); err != nil {
		return fmt.Errorf("cluster join: %w", err)
	}
	certPEM, hostKeyPEM, err := hostCert(ca, caKey, host, advertiseHost)
	if err != nil {
		return fmt.Errorf("cluster join: %w", err)
	}
	// Each file is replaced through a temp file and a rename in cdir, so a symlink planted at a name is
	// replaced, never followed, and a reader sees an old file or a new one.
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{CAFile, caPEM, 0o644},
		{SecretFile, []byte(hex.EncodeToString(secret) + "\n"), 0o600},
		{HostKeyFile, hostKeyPEM, 0o600},
		{HostCertFile, certPEM, 0o644},
	}
	for _, f := range files {
		if err := atomicfile.Write(filepath.Join(cdir, f.name), f.data, f.mode); err != nil {
			return fmt.Errorf("cluster join: %w", err)
		}
	}
	return atomicfile.SyncDir(cdir)
}

// hostCert makes host's key and certificate, signed by the CA.
func hostCert(ca *x509.Certificate, caKey *ecdsa.PrivateKey, host, advertiseHost string) (certPEM, keyPEMBytes []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: host, Organization: []string{"vibe-browser"}},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(hostValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{host, "localhost", memberName},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	if ip := net.ParseIP(advertiseHost); ip != nil {
		if !ip.IsLoopback() {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		}
	} else if advertiseHost != "" && advertiseHost != host && advertiseHost != "localhost" {
		tmpl.DNSNames = append(tmpl.DNSNames, advertiseHost)
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	kp, err := keyPEM(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), kp, nil
}

// loadCA reads dir's CA certificate and key and checks that they belong together.
func loadCA(dir string) (*x509.Certificate, *ecdsa.PrivateKey, []byte, error) {
	caPEM, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read the cluster CA (made by vibe-browser cluster init): %w", err)
	}
	ca, err := x509.ParseCertificate(pemDER(caPEM))
	if err != nil || !ca.IsCA {
		return nil, nil, nil, fmt.Errorf("%s is no CA certificate", filepath.Join(dir, CAFile))
	}
	keyBytes, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read the cluster CA's key: %w", err)
	}
	block, _ := pem.Decode(keyBytes)
	var key *ecdsa.PrivateKey
	if block != nil {
		if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
			key, _ = k.(*ecdsa.PrivateKey)
		}
	}
	if key == nil {
		return nil, nil, nil, fmt.Errorf("%s is no ECDSA private key", filepath.Join(dir, CAKeyFile))
	}
	if pub, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, nil, fmt.Errorf("%s is not the key of %s", CAKeyFile, filepath.Join(dir, CAFile))
	}
	return ca, key, caPEM, nil
}

// readSecret reads a secret file: 32 bytes written as 64 hex digits.
func readSecret(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the cluster secret: %w", err)
	}
	raw, err := hex.DecodeString(string(bytes.TrimSpace(b)))
	if err != nil || len(raw) != secretLen {
		return nil, fmt.Errorf("%s is no cluster secret: want %d bytes as %d hex digits", path, secretLen, 2*secretLen)
	}
	return raw, nil
}

// privateDir makes dir (and its parents) and leaves it 0700, refusing a symlink in its place.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s must be a folder of its own, not a symlink", dir)
	}
	return os.Chmod(dir, 0o700)
}

// writeNew writes path, which must not exist yet: a synced temp file hard-linked to its name, so that
// neither a file nor a symlink already there is overwritten or followed, and no reader sees half a file.
func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err = errors.Join(err, f.Chmod(mode), f.Sync(), f.Close()); err != nil {
		return err
	}
	return os.Link(tmp, path)
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// pemDER is the first CERTIFICATE block's bytes in b, or nil.
func pemDER(b []byte) []byte {
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			return nil
		}
		if block.Type == "CERTIFICATE" {
			return block.Bytes
		}
	}
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127)) // crypto/rand does not fail
	return n
}
