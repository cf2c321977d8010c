package wrapper

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"vibebrowser/manager/api"
)

func webConfig(home string) *api.ShimConfig {
	return &api.ShimConfig{Format: api.ShimFormat, Kind: api.ShimKindWeb,
		ManagerSocket: api.SocketPath(home), RealBU: "/usr/bin/browser-use",
		RuntimeDir: filepath.Join(home, "r"), TmpDir: filepath.Join(home, "bh-tmp"), WorkerSlots: 3, CallTimeoutS: 7}
}

func TestInstall(t *testing.T) {
	home := t.TempDir()
	shim := filepath.Join(home, "wrapshim")
	if err := os.WriteFile(shim, []byte("shim v1"), 0o700); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, "bin", api.WebKey)
	cfg := webConfig(home)
	for _, content := range []string{"shim v1", "shim v2"} { // the second install replaces the first
		if err := os.WriteFile(shim, []byte(content), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := Install(dir, shim, cfg); err != nil {
			t.Fatalf("Install(%s) = %v", dir, err)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, BinaryName)); !bytes.Equal(got, []byte(content)) {
			t.Errorf("installed binary holds %q; want %q", got, content)
		}
	}
	for name, want := range map[string]os.FileMode{BinaryName: 0o755, api.ShimConfigName: 0o644} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s mode %v; want %v", name, fi.Mode().Perm(), want)
		}
	}
	got, err := api.LoadShimConfig(filepath.Join(dir, api.ShimConfigName))
	if err != nil || *got != *cfg {
		t.Errorf("LoadShimConfig = %+v, %v; want %+v", got, err, cfg)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%s holds %d entries; want the binary and its config, no temp files", dir, len(entries))
	}
}

func TestInstallRefusesAnInvalidConfig(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, "bin", "acme")
	cfg := webConfig(home)
	cfg.RealBU = "browser-use" // relative: a shim would refuse it on every call
	if err := Install(dir, "/nonexistent", cfg); err == nil {
		t.Fatalf("Install with real_bu %q succeeded; want it refused", cfg.RealBU)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a refused install created %s", dir)
	}
}
