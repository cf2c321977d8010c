package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"vibebrowser/manager/cluster/hostname"
)

// Cluster is the configuration of SPEC §19's cluster mode. Its zero value is single-host mode, where no NATS
// code runs. Node set runs an embedded NATS node and connects to it; URLs set connects to an existing cluster.
type Cluster struct {
	URLs      []string // VIBE_CLUSTER: an existing cluster's servers, nats:// or tls:// URLs
	Creds     string   // VIBE_CLUSTER_CREDS: a NATS creds file for URLs (absolute); "" = none
	CA        string   // VIBE_CLUSTER_CA: the CA PEM that URLs' servers' TLS is verified against (absolute); "" = the system's
	Node      string   // VIBE_CLUSTER_NODE: host:port of the embedded node's client listener; "" = no node
	NodeRoute string   // VIBE_CLUSTER_NODE_ROUTE: host:port of the embedded node's route listener
	Routes    []string // VIBE_CLUSTER_ROUTES: the other nodes' routes, nats-route://host:port
	Host      string   // VIBE_HOST: this host's name; default the OS hostname's first label, lower-cased
	Advertise string   // VIBE_ADVERTISE: host:port where other hosts reach this host's door
}

// On reports whether the manager runs as one host of a cluster.
func (c Cluster) On() bool { return len(c.URLs) > 0 || c.Node != "" }

// clusterKnobs reads and checks the cluster knobs. Each is checked when set; the ones that only make sense in
// one mode are refused outside it, so a half-configured cluster never starts as a lone host.
func clusterKnobs(getenv func(string) string, osHostname func() (string, error)) (Cluster, error) {
	var c Cluster
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	var err error
	if c.URLs, err = urlList("VIBE_CLUSTER", env("VIBE_CLUSTER"), []string{"nats", "tls"},
		"nats://host[:port] or tls://host[:port], comma-separated (no user:password@: use VIBE_CLUSTER_CREDS)"); err != nil {
		return Cluster{}, err
	}
	if c.Routes, err = urlList("VIBE_CLUSTER_ROUTES", env("VIBE_CLUSTER_ROUTES"), []string{"nats-route"},
		"nats-route://host:port, comma-separated"); err != nil {
		return Cluster{}, err
	}
	for _, r := range c.Routes {
		if u, _ := url.Parse(r); u.Port() == "" {
			return Cluster{}, fmt.Errorf("VIBE_CLUSTER_ROUTES=%q: %s names no port; want nats-route://host:port, comma-separated",
				env("VIBE_CLUSTER_ROUTES"), r)
		}
	}
	for _, k := range []struct {
		name string
		dst  *string
	}{{"VIBE_CLUSTER_CREDS", &c.Creds}, {"VIBE_CLUSTER_CA", &c.CA}} {
		if *k.dst, err = existingFile(k.name, env(k.name)); err != nil {
			return Cluster{}, err
		}
	}
	for _, k := range []struct {
		name   string
		dst    *string
		listen bool
	}{{"VIBE_CLUSTER_NODE", &c.Node, true}, {"VIBE_CLUSTER_NODE_ROUTE", &c.NodeRoute, true}, {"VIBE_ADVERTISE", &c.Advertise, false}} {
		if *k.dst, err = hostPort(k.name, env(k.name), k.listen); err != nil {
			return Cluster{}, err
		}
	}
	if c.Host, err = hostName(env("VIBE_HOST"), osHostname); err != nil {
		return Cluster{}, err
	}
	return c, c.checkMode()
}

// checkMode refuses knobs of one mode set in another, and a cluster mode missing what it needs.
func (c Cluster) checkMode() error {
	const forms = "VIBE_CLUSTER_NODE=host:port runs a NATS node inside the manager and connects to it; " +
		"VIBE_CLUSTER=nats://host:port connects to an existing NATS cluster"
	switch {
	case len(c.URLs) > 0 && c.Node != "":
		return errors.New("VIBE_CLUSTER and VIBE_CLUSTER_NODE are both set: set one; " + forms)
	case c.Node == "" && (c.NodeRoute != "" || len(c.Routes) > 0):
		return errors.New("VIBE_CLUSTER_NODE_ROUTE and VIBE_CLUSTER_ROUTES configure the embedded NATS node, but " +
			"VIBE_CLUSTER_NODE is not set: set it to the node's client address (host:port), or unset them")
	case len(c.URLs) == 0 && (c.Creds != "" || c.CA != ""):
		return errors.New("VIBE_CLUSTER_CREDS and VIBE_CLUSTER_CA are for connecting to an existing cluster, but " +
			"VIBE_CLUSTER is not set: set it to the cluster's servers (nats://host:port, comma-separated), or unset them")
	case !c.On():
		return nil
	case c.Node != "" && c.NodeRoute == "":
		return errors.New("VIBE_CLUSTER_NODE is set but VIBE_CLUSTER_NODE_ROUTE is not: the node needs a route " +
			"listener (host:port, conventionally port 6222) where the other nodes reach it")
	case c.Advertise == "":
		return errors.New("VIBE_ADVERTISE is not set: in cluster mode, want host:port where other hosts reach " +
			"this host's door (its host among the names cluster join was given)")
	case c.Host == "":
		return errors.New("VIBE_HOST is not set and the OS hostname gives no host name: set VIBE_HOST to this " +
			"host's name (" + hostname.Rule + "), the one cluster join was given")
	}
	return nil
}

// urlList reads a comma-separated list of URLs of the given schemes, each with a host and nothing else.
func urlList(name, raw string, schemes []string, form string) ([]string, error) {
	if raw == "" {
		return nil, nil
	}
	var out []string
	for _, s := range strings.Split(raw, ",") {
		s = strings.TrimSpace(s)
		u, err := url.Parse(s)
		ok := err == nil && u.Hostname() != "" && u.User == nil && (u.Path == "" || u.Path == "/") &&
			u.RawQuery == "" && u.Fragment == "" && (u.Port() == "" || validPort(u.Port()))
		if ok {
			ok = false
			for _, scheme := range schemes {
				ok = ok || u.Scheme == scheme
			}
		}
		if !ok {
			return nil, fmt.Errorf("%s=%q: %q is not a URL of the allowed form; want %s", name, raw, s, form)
		}
		out = append(out, u.Scheme+"://"+u.Host)
	}
	return out, nil
}

// existingFile reads an absolute path knob that must name a file; "" leaves it unset.
func existingFile(name, raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	if !filepath.IsAbs(raw) {
		return "", fmt.Errorf("%s=%q: want the absolute path of an existing file", name, raw)
	}
	fi, err := os.Stat(raw)
	if err != nil {
		return "", fmt.Errorf("%s=%q: want the absolute path of an existing file: %w", name, raw, err)
	}
	if fi.IsDir() {
		return "", fmt.Errorf("%s=%q is a folder: want the absolute path of an existing file", name, raw)
	}
	return filepath.Clean(raw), nil
}

// hostPort reads a host:port knob; "" leaves it unset. A listen address may leave its host empty (every
// interface); an advertised one names the host others dial.
func hostPort(name, raw string, listen bool) (string, error) {
	if raw == "" {
		return "", nil
	}
	host, port, err := net.SplitHostPort(raw)
	if err != nil || !validPort(port) {
		return "", fmt.Errorf("%s=%q is not an address: want host:port with a port from 1 to 65535", name, raw)
	}
	if ip := net.ParseIP(host); !listen && (host == "" || ip != nil && ip.IsUnspecified()) {
		return "", fmt.Errorf("%s=%q names no host others can dial: want host:port with this host's name or IP", name, raw)
	}
	return raw, nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// hostName is VIBE_HOST when set (it must be a valid host name), else the OS hostname's first label,
// lower-cased, or "" when that is no valid host name (an error only in cluster mode: see checkMode).
func hostName(raw string, osHostname func() (string, error)) (string, error) {
	if raw != "" {
		if err := hostname.Check(raw); err != nil {
			return "", fmt.Errorf("VIBE_HOST=%q: want %s", raw, hostname.Rule)
		}
		return raw, nil
	}
	h, err := osHostname()
	if err != nil {
		return "", nil
	}
	h, _, _ = strings.Cut(strings.ToLower(h), ".")
	if hostname.Check(h) != nil {
		return "", nil
	}
	return h, nil
}
