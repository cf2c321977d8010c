package keeper

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCommandRoundTrips(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"a store", Config{Key: "store-1", RunDir: "/home/u/.vibe-seller/run", Profile: "/p/store-1",
			Binary: "/usr/bin/chromium", Args: []string{"--headless", "--remote-debugging-pipe", "--user-data-dir=/p/store-1", "about:blank"}}},
		{"the web browser", Config{Key: "_web", RunDir: "/run/v", Profile: "/p/web",
			Binary: "/opt/chrome", Args: []string{"--remote-debugging-pipe", "--user-data-dir=/p/web"}}},
		{"chromium's own -- and flags like the keeper's", Config{Key: "k", RunDir: "/r", Profile: "/p",
			Binary: "/c", Args: []string{"--remote-debugging-pipe", "--user-data-dir=/p", "--key", "x", "--", "--run-dir"}}},
		{"a proxy forwarder", Config{Key: "s", RunDir: "/r", Profile: "/p", ForwardPort: 9411,
			ForwardStore: "Acme Shop", Binary: "/c", Args: []string{"--remote-debugging-pipe", "--user-data-dir=/p"}}},
		{"an orphan deadline", Config{Key: "s", RunDir: "/r", Profile: "/p", OrphanStop: 2500 * time.Millisecond,
			Binary: "/c", Args: []string{"--remote-debugging-pipe", "--user-data-dir=/p"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			argv := Command(tt.cfg)
			got, err := parseArgs(argv)
			if err != nil {
				t.Fatalf("parseArgs(%q): %v", argv, err)
			}
			if got.Key != tt.cfg.Key || got.RunDir != tt.cfg.RunDir || got.Profile != tt.cfg.Profile ||
				got.Binary != tt.cfg.Binary || !slices.Equal(got.Args, tt.cfg.Args) ||
				got.ForwardPort != tt.cfg.ForwardPort || got.ForwardStore != tt.cfg.ForwardStore || got.OrphanStop != tt.cfg.OrphanStop {
				t.Errorf("parseArgs(Command(%+v)) = %+v; want it back", tt.cfg, got)
			}
		})
	}
}

func TestParseArgsRefuses(t *testing.T) {
	ok := []string{"--remote-debugging-pipe", "--user-data-dir=/p"}
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{"no key", append([]string{"--run-dir", "/r", "--profile", "/p", "--", "/c"}, ok...), "--key is required"},
		{"a key with a slash", append([]string{"--key", "a/b", "--run-dir", "/r", "--profile", "/p", "--", "/c"}, ok...), "holds no '/'"},
		{"no run dir", append([]string{"--key", "k", "--profile", "/p", "--", "/c"}, ok...), "--run-dir is required"},
		{"no profile", append([]string{"--key", "k", "--run-dir", "/r", "--", "/c"}, ok...), "--profile is required"},
		{"a relative profile", []string{"--key", "k", "--run-dir", "/r", "--profile", "p", "--", "/c", "--remote-debugging-pipe", "--user-data-dir=p"}, "must be absolute"},
		{"no chromium", []string{"--key", "k", "--run-dir", "/r", "--profile", "/p", "--"}, "no Chromium command line"},
		{"no pipe", []string{"--key", "k", "--run-dir", "/r", "--profile", "/p", "--", "/c", "--user-data-dir=/p"}, "must hold --remote-debugging-pipe"},
		{"a pipe after chromium's --", []string{"--key", "k", "--run-dir", "/r", "--profile", "/p", "--", "/c", "--user-data-dir=/p", "--", "--remote-debugging-pipe"}, "must hold --remote-debugging-pipe"},
		{"the cbor pipe", []string{"--key", "k", "--run-dir", "/r", "--profile", "/p", "--", "/c", "--remote-debugging-pipe=cbor", "--user-data-dir=/p"}, "JSON framing"},
		{"a debugging port", append([]string{"--key", "k", "--run-dir", "/r", "--profile", "/p", "--", "/c", "--remote-debugging-port=9222"}, ok...), "no debugging port"},
		{"a debugging port, one dash", append([]string{"--key", "k", "--run-dir", "/r", "--profile", "/p", "--", "/c", "-remote-debugging-port=0"}, ok...), "no debugging port"},
		{"another profile", []string{"--key", "k", "--run-dir", "/r", "--profile", "/p", "--", "/c", "--remote-debugging-pipe", "--user-data-dir=/q"}, "must be the same"},
		{"a negative orphan deadline", append([]string{"--key", "k", "--orphan-stop", "-1s", "--run-dir", "/r", "--profile", "/p", "--", "/c"}, ok...), "--orphan-stop -1s"},
		{"an unknown flag", append([]string{"--key", "k", "--bogus", "--run-dir", "/r", "--profile", "/p", "--", "/c"}, ok...), "bogus"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseArgs(tt.argv)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parseArgs(%q) = %v; want an error containing %q", tt.argv, err, tt.want)
			}
		})
	}
}

func TestMainRefusesAWrongCommandLine(t *testing.T) {
	if code := Main([]string{"--key", "k"}); code != exitUsage {
		t.Errorf("Main(--key k) = %d; want %d", code, exitUsage)
	}
}

func TestReadUpstream(t *testing.T) {
	p, err := readUpstream(strings.NewReader("socks5://u:pw@127.0.0.1:1080\nignored\n"))
	if err != nil || p.Redacted() != "socks5://u:***@127.0.0.1:1080" || p.Password != "pw" {
		t.Errorf("readUpstream = %+v, %v; want the first line's proxy", p, err)
	}
	for _, in := range []string{"", "\n", "ftp://h:1\n", strings.Repeat("x", maxProxyLine+10)} {
		if _, err := readUpstream(strings.NewReader(in)); err == nil {
			t.Errorf("readUpstream(%.20q) took it", in)
		}
	}
}
