package mux

import (
	"strings"
	"testing"
	"time"
)

func TestConfigDefaults(t *testing.T) {
	base := Config{Upstream: "ws://x", Token: "t", Addr: "127.0.0.1:0"}
	tests := []struct {
		name       string
		set        func(*Config)
		tabCap     int
		maxClients int
		grace      time.Duration
		wantErr    []string // every substring the error must name; nil: no error
	}{
		{name: "zero values are the defaults", set: func(*Config) {},
			tabCap: DefaultTabCap, maxClients: DefaultMaxClients, grace: DefaultGrace},
		{name: "Off switches off the tab cap and the grace", set: func(c *Config) { c.TabCap, c.Grace = Off, Off },
			tabCap: Off, maxClients: DefaultMaxClients, grace: Off},
		{name: "values are kept", set: func(c *Config) { c.TabCap, c.MaxClients, c.Grace = 3, 4, time.Second },
			tabCap: 3, maxClients: 4, grace: time.Second},
		{name: "MaxClients cannot be switched off", set: func(c *Config) { c.MaxClients = Off },
			wantErr: []string{"MaxClients", "-1", "0 for the default (16)"}},
		{name: "below Off", set: func(c *Config) { c.TabCap = -2 },
			wantErr: []string{"TabCap", "-2", "mux.Off", "default (12)"}},
		{name: "a negative duration", set: func(c *Config) { c.Grace = -time.Second },
			wantErr: []string{"Grace", "-1s", "mux.Off", "default (8m0s)"}},
		{name: "a negative timing", set: func(c *Config) { c.PingInterval = -time.Second },
			wantErr: []string{"PingInterval", "-1s"}},
		{name: "Port instead of Addr", set: func(c *Config) { c.Addr, c.Port = "", 9400 },
			tabCap: DefaultTabCap, maxClients: DefaultMaxClients, grace: DefaultGrace},
		{name: "Port and Addr at once", set: func(c *Config) { c.Port = 9400 },
			wantErr: []string{"2 of Listener, Addr and Port", "exactly one"}},
		{name: "nowhere to answer", set: func(c *Config) { c.Addr = "" },
			wantErr: []string{"0 of Listener, Addr and Port", "exactly one"}},
		{name: "a keeper's socket", set: func(c *Config) { c.Upstream = "unix:/home/u/.vibe-seller/run/keep-s1.sock" },
			tabCap: DefaultTabCap, maxClients: DefaultMaxClients, grace: DefaultGrace},
		{name: "an http endpoint", set: func(c *Config) { c.Upstream = "http://127.0.0.1:9222" },
			tabCap: DefaultTabCap, maxClients: DefaultMaxClients, grace: DefaultGrace},
		{name: "a relative keeper socket", set: func(c *Config) { c.Upstream = "unix:run/keep-s1.sock" },
			wantErr: []string{"unix:run/keep-s1.sock", "http://HOST:PORT", "ws://HOST:PORT/devtools/browser/ID", "unix:/abs/path/keep-<key>.sock"}},
		{name: "a keeper's identity file", set: func(c *Config) { c.Upstream = "unix:/run/keep-s1.json" },
			wantErr: []string{"keep-s1.json", "http://HOST:PORT", "ws://HOST:PORT/devtools/browser/ID", "unix:/abs/path/keep-<key>.sock"}},
		{name: "a socket not named by a keeper", set: func(c *Config) { c.Upstream = "unix:/run/manager.sock" },
			wantErr: []string{"manager.sock", "http://HOST:PORT", "ws://HOST:PORT/devtools/browser/ID", "unix:/abs/path/keep-<key>.sock"}},
		{name: "a keeper socket with no key", set: func(c *Config) { c.Upstream = "unix:/run/keep-.sock" },
			wantErr: []string{"keep-.sock"}},
		{name: "a bare path", set: func(c *Config) { c.Upstream = "/run/keep-s1.sock" },
			wantErr: []string{"http://HOST:PORT", "ws://HOST:PORT/devtools/browser/ID", "unix:/abs/path/keep-<key>.sock"}},
		{name: "Port out of range", set: func(c *Config) { c.Addr, c.Port = "", 70000 },
			wantErr: []string{"Port 70000", "1-65535"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base
			tt.set(&c)
			got, err := c.withDefaults()
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("withDefaults() = nil error; want one naming %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Fatalf("withDefaults() error %q; want it to name %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("withDefaults(): %v", err)
			}
			if got.TabCap != tt.tabCap || got.MaxClients != tt.maxClients || got.Grace != tt.grace {
				t.Fatalf("withDefaults() TabCap, MaxClients, Grace = %d, %d, %v; want %d, %d, %v",
					got.TabCap, got.MaxClients, got.Grace, tt.tabCap, tt.maxClients, tt.grace)
			}
		})
	}
}
