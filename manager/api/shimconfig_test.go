package api

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const webShim = `"kind":"web","manager_socket":"/h/run/manager.sock","real_bu":"/usr/bin/browser-use","runtime_dir":"/h/r","tmp_dir":"/h/bh-tmp"`

func TestParseShimConfig(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // a fragment of the error; "" for a valid config
	}{
		{"guard", `{"format":1,"kind":"guard"}`, ""},
		{"web", `{"format":1,` + webShim + `}`, ""},
		{"store", `{"format":1,"kind":"store","store_id":"0d1c","slug":"acme","manager_socket":"/s","real_bu":"/b","runtime_dir":"/r","tmp_dir":"/t","worker_slots":3}`, ""},
		{"missing format", `{"kind":"guard"}`, "missing format"},
		{"negative format", `{"format":-1,"kind":"guard"}`, "not a version"},
		{"newer format", fmt.Sprintf(`{"format":%d,"kind":"guard"}`, ShimFormat+1), "newer than this shim"},
		{"unknown field", `{"format":1,"kind":"guard","extra":1}`, "unknown field"},
		{"trailing data", `{"format":1,"kind":"guard"} {}`, "trailing data"},
		{"not JSON", `{`, "unexpected EOF"},
		{"unknown kind", `{"format":1,"kind":"mcp"}`, `kind "mcp"`},
		{"store without slug", `{"format":1,"kind":"store","store_id":"0d1c"}`, "store_id and slug"},
		{"relative real_bu", `{"format":1,"kind":"web","manager_socket":"/s","real_bu":"browser-use","runtime_dir":"/r","tmp_dir":"/t"}`, "real_bu must be an absolute path"},
		{"worker slots over 99", `{"format":1,` + webShim + `,"worker_slots":100}`, "outside 0..99"},
		{"negative timeout", `{"format":1,` + webShim + `,"call_timeout_s":-1}`, "call_timeout_s -1 is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseShimConfig([]byte(tt.in))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("ParseShimConfig(%s) = %v; want it valid", tt.in, err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("ParseShimConfig(%s) = %v; want an error saying %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestShimConfigDefaults(t *testing.T) {
	var zero ShimConfig
	set := ShimConfig{CallTimeoutS: 1, KillGraceS: 2, ReloadTimeoutS: 3, EnsureTimeoutS: 4}
	tests := []struct {
		name      string
		zero, set time.Duration
		def, want time.Duration
	}{
		{"CallTimeout", zero.CallTimeout(), set.CallTimeout(), DefaultCallTimeoutS * time.Second, time.Second},
		{"KillGrace", zero.KillGrace(), set.KillGrace(), DefaultKillGraceS * time.Second, 2 * time.Second},
		{"ReloadTimeout", zero.ReloadTimeout(), set.ReloadTimeout(), DefaultReloadTimeoutS * time.Second, 3 * time.Second},
		{"EnsureTimeout", zero.EnsureTimeout(), set.EnsureTimeout(), DefaultEnsureTimeoutS * time.Second, 4 * time.Second},
	}
	for _, tt := range tests {
		if tt.zero != tt.def || tt.set != tt.want {
			t.Errorf("%s() = %v unset, %v set; want %v, %v", tt.name, tt.zero, tt.set, tt.def, tt.want)
		}
	}
}

func TestLoadShimConfig(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, ShimConfigName)
	if _, err := LoadShimConfig(missing); !errors.Is(err, ErrNoShimConfig) {
		t.Errorf("LoadShimConfig(missing) = %v; want ErrNoShimConfig", err)
	}
	broken := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(broken, []byte(`{"kind":"guard"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadShimConfig(broken); err == nil || errors.Is(err, ErrNoShimConfig) || !strings.Contains(err.Error(), "is broken") {
		t.Errorf("LoadShimConfig(broken) = %v; want a broken-config error that is not ErrNoShimConfig", err)
	}
}

// TestLoadShimConfigReadsItWhole: the config is read to its end, however it grows past the first read, and
// a file far beyond any config is refused.
func TestLoadShimConfigReadsItWhole(t *testing.T) {
	dir := t.TempDir()
	long := filepath.Join(dir, "long.json")
	padded := `{"format":1,` + strings.Repeat(" ", 70000) + `"kind":"guard"}`
	if err := os.WriteFile(long, []byte(padded), 0o600); err != nil {
		t.Fatal(err)
	}
	if cfg, err := LoadShimConfig(long); err != nil || cfg.Kind != ShimKindGuard {
		t.Errorf("LoadShimConfig(%d bytes) = %+v, %v; want the guard config", len(padded), cfg, err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, make([]byte, maxShimConfig+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadShimConfig(huge); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("LoadShimConfig(%d bytes) = %v; want it refused as too big", maxShimConfig+1, err)
	}
}
