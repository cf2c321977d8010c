package config_test

import (
	"encoding/json"
	"testing"

	"vibebrowser/manager/config"
	"vibebrowser/state"
)

func TestStoreFacts(t *testing.T) {
	env := map[string]string{"VIBE_HOME": t.TempDir(), "VIBE_HEADLESS": "1", "PATH": "/nonexistent"}
	cfg, err := config.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name         string
		store        state.Store
		headless     bool
		ziniaoPort   int
		ziniaoAccnt  string
		wantNoZiniao bool
	}{
		{name: "chrome follows VIBE_HEADLESS", store: state.Store{Backend: state.BackendChrome}, headless: true, wantNoZiniao: true},
		{name: "chrome's own setting wins", store: state.Store{Backend: state.BackendChrome, Config: json.RawMessage(`{"headless":false}`)},
			headless: false, wantNoZiniao: true},
		{name: "ziniao on its port", store: state.Store{Backend: state.BackendZiniao, Config: json.RawMessage(`{"ziniao_port":17001}`),
			Ziniao: state.ZiniaoAccount{Company: "co", Username: "me", Password: "pw"}, ZiniaoBrowser: "42"},
			headless: true, ziniaoPort: 17001, ziniaoAccnt: "co/me"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := cfg.StoreFacts(tt.store)
			if err != nil {
				t.Fatal(err)
			}
			if f.Headless != tt.headless {
				t.Errorf("StoreFacts(%s).Headless = %v; want %v", tt.store.Config, f.Headless, tt.headless)
			}
			if tt.wantNoZiniao != (f.Ziniao == nil) {
				t.Fatalf("StoreFacts(%s).Ziniao = %+v; want a client: %v", tt.store.Backend, f.Ziniao, !tt.wantNoZiniao)
			}
			if f.Ziniao != nil && (f.Ziniao.Port != tt.ziniaoPort || f.Ziniao.Account.Company+"/"+f.Ziniao.Account.Username != tt.ziniaoAccnt) {
				t.Errorf("StoreFacts ziniao client = %+v; want port %d, account %s", f.Ziniao, tt.ziniaoPort, tt.ziniaoAccnt)
			}
		})
	}
	if !cfg.HeadlessByDefault() {
		t.Error("HeadlessByDefault() = false with VIBE_HEADLESS=1; want true")
	}
}
