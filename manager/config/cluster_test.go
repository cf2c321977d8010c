package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"vibebrowser/manager/config"
)

func TestSingleHostModeHasClusterOff(t *testing.T) {
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": t.TempDir()}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster.On() || cfg.Cluster.Node != "" || len(cfg.Cluster.URLs) != 0 || cfg.Cluster.Advertise != "" {
		t.Errorf("Cluster = %+v with no cluster knob; want single-host mode", cfg.Cluster)
	}
	h, _ := os.Hostname()
	want, _, _ := strings.Cut(strings.ToLower(h), ".")
	if cfg.Cluster.Host != want {
		t.Errorf("Cluster.Host = %q; want the hostname's first label, %q", cfg.Cluster.Host, want)
	}
}

func TestClusterKnobs(t *testing.T) {
	home := t.TempDir()
	file := filepath.Join(t.TempDir(), "vibe.creds")
	if err := os.WriteFile(file, []byte("creds"), 0o600); err != nil {
		t.Fatal(err)
	}
	node := map[string]string{"VIBE_CLUSTER_NODE": "10.0.0.1:4222", "VIBE_CLUSTER_NODE_ROUTE": "10.0.0.1:6222",
		"VIBE_ADVERTISE": "10.0.0.1:9500", "VIBE_HOST": "host1"}
	client := map[string]string{"VIBE_CLUSTER": "nats://a:4222", "VIBE_ADVERTISE": "box.example:9500", "VIBE_HOST": "host1"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{"VIBE_HOME": home}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name string
		env  map[string]string
		want string // "" = accepted
	}{
		{"embedded node", with(node), ""},
		{"node on every interface", with(node, "VIBE_CLUSTER_NODE", ":4222", "VIBE_CLUSTER_NODE_ROUTE", "0.0.0.0:6222"), ""},
		{"node with routes", with(node, "VIBE_CLUSTER_ROUTES", "nats-route://10.0.0.2:6222, nats-route://[fd00::3]:6222"), ""},
		{"existing cluster", with(client, "VIBE_CLUSTER", "nats://a:4222,tls://b.example:4222,nats://c"), ""},
		{"existing cluster with creds and CA", with(client, "VIBE_CLUSTER_CREDS", file, "VIBE_CLUSTER_CA", file), ""},
		{"host with dots and capitals", with(node, "VIBE_HOST", "Box-1.example"), ""},

		{"both modes", with(node, "VIBE_CLUSTER", "nats://a:4222"), "VIBE_CLUSTER and VIBE_CLUSTER_NODE are both set"},
		{"cluster not a URL", with(client, "VIBE_CLUSTER", "a:4222"), "VIBE_CLUSTER=\"a:4222\""},
		{"cluster http", with(client, "VIBE_CLUSTER", "http://a:4222"), "nats://host[:port] or tls://host[:port]"},
		{"cluster password in URL", with(client, "VIBE_CLUSTER", "nats://u:p@a:4222"), "use VIBE_CLUSTER_CREDS"},
		{"cluster bad port", with(client, "VIBE_CLUSTER", "nats://a:99999"), "VIBE_CLUSTER="},
		{"cluster path", with(client, "VIBE_CLUSTER", "nats://a:4222/x"), "VIBE_CLUSTER="},
		{"cluster empty entry", with(client, "VIBE_CLUSTER", "nats://a:4222,"), "VIBE_CLUSTER="},
		{"creds relative", with(client, "VIBE_CLUSTER_CREDS", "vibe.creds"), "VIBE_CLUSTER_CREDS=\"vibe.creds\": want the absolute path"},
		{"creds missing", with(client, "VIBE_CLUSTER_CREDS", "/nonexistent/vibe.creds"), "VIBE_CLUSTER_CREDS"},
		{"creds a folder", with(client, "VIBE_CLUSTER_CREDS", home), "is a folder"},
		{"CA missing", with(client, "VIBE_CLUSTER_CA", "/nonexistent/ca.pem"), "VIBE_CLUSTER_CA"},
		{"CA relative", with(client, "VIBE_CLUSTER_CA", "ca.pem"), "VIBE_CLUSTER_CA=\"ca.pem\": want the absolute path"},
		{"creds without cluster", with(node, "VIBE_CLUSTER_CREDS", file), "VIBE_CLUSTER is not set"},
		{"node no port", with(node, "VIBE_CLUSTER_NODE", "10.0.0.1"), "VIBE_CLUSTER_NODE=\"10.0.0.1\" is not an address: want host:port"},
		{"node port 0", with(node, "VIBE_CLUSTER_NODE", "10.0.0.1:0"), "port from 1 to 65535"},
		{"node without route", with(node, "VIBE_CLUSTER_NODE_ROUTE", ""), "VIBE_CLUSTER_NODE_ROUTE is not"},
		{"route bad", with(node, "VIBE_CLUSTER_NODE_ROUTE", "6222"), "VIBE_CLUSTER_NODE_ROUTE=\"6222\" is not an address"},
		{"route without node", with(client, "VIBE_CLUSTER_NODE_ROUTE", "10.0.0.1:6222"), "VIBE_CLUSTER_NODE is not set"},
		{"routes without node", map[string]string{"VIBE_HOME": home, "VIBE_CLUSTER_ROUTES": "nats-route://b:6222"}, "VIBE_CLUSTER_NODE is not set"},
		{"routes wrong scheme", with(node, "VIBE_CLUSTER_ROUTES", "nats://10.0.0.2:6222"), "want nats-route://host:port"},
		{"routes no port", with(node, "VIBE_CLUSTER_ROUTES", "nats-route://10.0.0.2"), "VIBE_CLUSTER_ROUTES"},
		{"advertise missing", with(node, "VIBE_ADVERTISE", ""), "VIBE_ADVERTISE is not set"},
		{"advertise every interface", with(node, "VIBE_ADVERTISE", "0.0.0.0:9500"), "VIBE_ADVERTISE=\"0.0.0.0:9500\" names no host"},
		{"advertise no host", with(node, "VIBE_ADVERTISE", ":9500"), "VIBE_ADVERTISE"},
		{"advertise no port", with(node, "VIBE_ADVERTISE", "10.0.0.1"), "want host:port"},
		{"host underscore", with(node, "VIBE_HOST", "my_host"), "VIBE_HOST=\"my_host\": want 1 to 63 letters"},
		{"host leading dash", with(node, "VIBE_HOST", "-h"), "VIBE_HOST"},
		{"host too long", with(node, "VIBE_HOST", strings.Repeat("h", 64)), "VIBE_HOST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.FromEnv(func(k string) string { return tt.env[k] })
			if tt.want == "" {
				if err != nil || !cfg.Cluster.On() {
					t.Errorf("FromEnv(%v) = %v; want cluster mode on", tt.env, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FromEnv(%v) = %v; want an error containing %q", tt.env, err, tt.want)
			}
		})
	}
}

func TestClusterKnobValues(t *testing.T) {
	env := map[string]string{"VIBE_HOME": t.TempDir(), "VIBE_CLUSTER_NODE": "10.0.0.1:4222",
		"VIBE_CLUSTER_NODE_ROUTE": "10.0.0.1:6222", "VIBE_CLUSTER_ROUTES": " nats-route://b:6222 ,nats-route://c:6222",
		"VIBE_ADVERTISE": "10.0.0.1:9500", "VIBE_HOST": "host1"}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Cluster
	if c.Node != "10.0.0.1:4222" || c.NodeRoute != "10.0.0.1:6222" || c.Host != "host1" || c.Advertise != "10.0.0.1:9500" ||
		!slices.Equal(c.Routes, []string{"nats-route://b:6222", "nats-route://c:6222"}) || len(c.URLs) != 0 {
		t.Errorf("Cluster = %+v", c)
	}
}
