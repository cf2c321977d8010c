package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/config"
)

func TestInvalidKnobsNameTheVariable(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"VIBE_TAB_CAP", "many", "integer from 0 to"},
		{"VIBE_TAB_CAP", "-1", "integer from 0 to"},
		{"VIBE_PROXY_PORT_BASE", "80", "from 1024 to 65000"},
		{"VIBE_CALL_TIMEOUT_S", "0", "from 1 to"},
		{"VIBE_BROWSER_WORKER_SLOTS", "100", "from 0 to 99"},
		{"VIBE_BROWSER_IDLE_S", "1.5", "integer"},
		{"VIBE_BROWSER_START_TIMEOUT_S", "x", "integer"},
		{"VIBE_BROWSER_RELAUNCH_MAX", "-2", "integer"},
		{"VIBE_BROWSER_RELAUNCH_WINDOW_S", "0", "from 1 to"},
		{"VIBE_MUX_MAX_CLIENTS", "0", "from 1 to"},
		{"VIBE_MUX_GRACE_S", "soon", "integer"},
		{"VIBE_TASK_LEASE_S", "0", "from 1 to"},
		{"VIBE_REAP_INTERVAL_S", "0", "from 1 to"},
		{"VIBE_DISABLE_DAEMON_SWEEP", "yes", "boolean"},
		{"VIBE_KEEP_BROWSERS_ON_EXIT", "2", "boolean"},
		{"VIBE_HEADLESS", "maybe", "boolean"},
		{"VIBE_HANDOFF_WAIT_MAX_S", "0", "from 1 to 86400"},
		{"VIBE_HANDOFF_WAIT_MAX_S", "an hour", "integer"},
		{"VIBE_NOTIFY_URL", "ftp://example.com/hook", "not an http(s) URL"},
		{"VIBE_NOTIFY_URL", "example.com/hook", "not an http(s) URL"},
		{"VIBE_NOTIFY_URL", "http://", "not an http(s) URL"},
		{"VIBE_NOTIFY_URL", "https://user:secret@example.com/hook", "no user:password@"},
		{"VIBE_NOTIFY_URL", "http://exa mple.com/", "not an http(s) URL"},
		{"VIBE_ZINIAO_CLIENT", "ziniao", "absolute path"},
		{"VIBE_ZINIAO_CLIENT", "/nonexistent/ziniao", "no such file"},
		{"VIBE_ZINIAO_CLIENT", "/tmp", "not an executable file"},
		{"VIBE_UI_ADDR", "9399", "want host:port"},
		{"VIBE_UI_ADDR", "127.0.0.1:70000", "port from 0 to 65535"},
		{"VIBE_UI_ADDR", "127.0.0.1:http", "port from 0 to 65535"},
		{"VIBE_UI_ADDR", "0.0.0.0:9399", "every interface"},
		{"VIBE_UI_ADDR", ":9399", "every interface"},
		{"VIBE_UI_ADDR", "192.168.1.5:9399", "VIBE_UI_ALLOW_REMOTE=1"},
		{"VIBE_UI_ADDR", "example.com:9399", "not a loopback address"},
		{"VIBE_UI_ALLOW_REMOTE", "sure", "boolean"},
		{"VIBE_DOWNLOAD_KEEP_DAYS", "-1", "from 0 to 36500"},
		{"VIBE_DOWNLOAD_KEEP_DAYS", "a month", "integer"},
		{"VIBE_CHROME_TRANSPORT", "websocket", "want one of pipe, port (default pipe)"},
		{"VIBE_CHROME_TRANSPORT", "Pipe", "want one of pipe, port"},
		{"VIBE_BROWSER_USER", "vibe-browser", "two stores must never share a browser user"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			_, err := config.FromEnv(func(k string) string {
				return map[string]string{"VIBE_HOME": t.TempDir(), tt.name: tt.value}[k]
			})
			if err == nil || !strings.Contains(err.Error(), tt.name) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FromEnv(%s=%q) = %v; want an error naming %s and %q", tt.name, tt.value, err, tt.name, tt.want)
			}
		})
	}
}

func TestKnobDefaults(t *testing.T) {
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": t.TempDir()}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ProxyPortBase != 9400 || cfg.CallTimeout != 120*time.Second || cfg.WorkerSlots != 3 || cfg.TabCap != 12 ||
		cfg.StartTimeout != 180*time.Second || cfg.RelaunchMax != 3 || cfg.RelaunchWindow != 600*time.Second ||
		cfg.MuxMaxClients != 16 || cfg.MuxGrace != 480*time.Second || cfg.TaskLease != time.Hour ||
		cfg.Idle != 300*time.Second || cfg.ReapInterval != 300*time.Second || cfg.UIAddr != "127.0.0.1:9399" ||
		cfg.UIAllowRemote || cfg.DownloadKeepDays != 30 || cfg.ChromeTransport != "pipe" {
		t.Errorf("defaults %+v differ from SPEC §4.3", cfg)
	}
}

func TestBrowserUseResolution(t *testing.T) {
	home := t.TempDir()
	dirA, dirB := t.TempDir(), t.TempDir()
	ours := filepath.Join(home, "bin", "acme")
	os.MkdirAll(ours, 0o700)
	testkit.FakeExecutable(t, ours, "browser-use")
	real := testkit.FakeExecutable(t, dirB, "browser-use")
	os.WriteFile(filepath.Join(dirA, "browser-use"), []byte("not executable"), 0o644)
	tests := []struct {
		name, explicit, path, want, problem string
	}{
		{"skips our own wrappers and non-executables", "", ours + ":" + dirA + ":" + dirB, real, ""},
		{"explicit", real, "", real, ""},
		{"explicit relative", "browser-use", "", "", "not an absolute path"},
		{"explicit missing", "/nonexistent/browser-use", "", "", "VIBE_BROWSER_USE"},
		{"none", "", ours, "", "no real browser-use CLI"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.FromEnv(func(k string) string {
				return map[string]string{"VIBE_HOME": home, "VIBE_BROWSER_USE": tt.explicit, "PATH": tt.path}[k]
			})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.BrowserUse != tt.want || !strings.Contains(cfg.BrowserUseProblem, tt.problem) {
				t.Errorf("BrowserUse = %q (%q); want %q (%q)", cfg.BrowserUse, cfg.BrowserUseProblem, tt.want, tt.problem)
			}
		})
	}
}
