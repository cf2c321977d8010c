package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClusterInitThenJoin(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	home := filepath.Join(t.TempDir(), "home")
	if code, _, errOut := run(t, "cluster", "init", dir); code != 0 {
		t.Fatalf("cluster init: exit %d (%s)", code, errOut)
	}
	code, _, errOut := run(t, "cluster", "init", dir)
	if code != 1 || !strings.Contains(errOut, "never overwritten") || strings.Count(strings.TrimSpace(errOut), "\n") > 0 {
		t.Errorf("second cluster init: exit %d, stderr %q; want 1 and one line saying a CA is never overwritten", code, errOut)
	}

	code, out, errOut := run(t, "--home", home, "cluster", "join", dir, "--host", "host1", "--advertise", "10.0.0.1:9500")
	if code != 0 {
		t.Fatalf("cluster join: exit %d (%s)", code, errOut)
	}
	for _, want := range []string{"VIBE_HOST=host1", "VIBE_ADVERTISE=10.0.0.1:9500", "VIBE_CLUSTER_NODE=10.0.0.1:4222",
		"VIBE_CLUSTER_NODE_ROUTE=10.0.0.1:6222", "VIBE_CLUSTER_ROUTES=nats-route://"} {
		if !strings.Contains(out, want) {
			t.Errorf("cluster join printed\n%s\nwant it to name %s", out, want)
		}
	}
	for _, name := range []string{"ca.pem", "host.pem", "host.key", "secret"} {
		if _, err := os.Stat(filepath.Join(home, "cluster", name)); err != nil {
			t.Errorf("after cluster join: %v", err)
		}
	}

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad host", []string{"cluster", "join", dir, "--host", "my_host"}, 1, "want 1 to 63 letters"},
		{"no host", []string{"cluster", "join", dir}, 2, "--host"},
		{"no CA", []string{"cluster", "join", t.TempDir(), "--host", "host2"}, 1, "cluster init"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := run(t, append([]string{"--home", t.TempDir()}, tt.args...)...)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d containing %q", code, errOut, tt.code, tt.want)
			}
		})
	}
}
