package config_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/config"
)

func TestLoginKnobs(t *testing.T) {
	home := t.TempDir()
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": home}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LoginCheckpoint != 2*time.Second || cfg.SnapshotEvery != 6*time.Hour || cfg.SnapshotKeep != 5 ||
		cfg.SnapshotDir != filepath.Join(home, "snapshots") || cfg.SnapshotKey != "" {
		t.Errorf("login defaults: checkpoint %v, snapshot every %v, keep %d, dir %q, key set %v",
			cfg.LoginCheckpoint, cfg.SnapshotEvery, cfg.SnapshotKeep, cfg.SnapshotDir, cfg.SnapshotKey != "")
	}
	good := map[string]string{"VIBE_HOME": home, "VIBE_SNAPSHOT_EVERY": "90m", "VIBE_LOGIN_CHECKPOINT_S": "0",
		"VIBE_SNAPSHOT_DIR": "/mnt/other/../snaps", "VIBE_SNAPSHOT_KEY": strings.Repeat("0f", 32)}
	cfg, err = config.FromEnv(func(k string) string { return good[k] })
	if err != nil || cfg.SnapshotEvery != 90*time.Minute || cfg.LoginCheckpoint != 0 || cfg.SnapshotDir != "/mnt/snaps" {
		t.Errorf("FromEnv(%v) = %+v, %v", good, cfg, err)
	}
	for _, tt := range []struct{ name, value, want string }{
		{"VIBE_SNAPSHOT_EVERY", "6", "90m or 6h"},
		{"VIBE_SNAPSHOT_EVERY", "10s", "from 1m"},
		{"VIBE_SNAPSHOT_EVERY", "-1h", "from 1m"},
		{"VIBE_SNAPSHOT_KEEP", "0", "from 1 to 1000"},
		{"VIBE_LOGIN_CHECKPOINT_S", "-1", "from 0 to 3600"},
		{"VIBE_SNAPSHOT_DIR", "snaps", "absolute"},
		{"VIBE_SNAPSHOT_KEY", "hunter2", "64 hex digits"},
	} {
		_, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": home, tt.name: tt.value}[k] })
		if err == nil || !strings.Contains(err.Error(), tt.name) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("FromEnv(%s=%q) = %v; want an error naming %s and %q", tt.name, tt.value, err, tt.name, tt.want)
		}
		if err != nil && tt.name == "VIBE_SNAPSHOT_KEY" && strings.Contains(err.Error(), tt.value) {
			t.Errorf("the error repeats the key: %v", err)
		}
	}
	if _, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": home, "VIBE_SNAPSHOT_EVERY": "0"}[k] }); err != nil {
		t.Errorf("VIBE_SNAPSHOT_EVERY=0 refused: %v", err)
	}
}
