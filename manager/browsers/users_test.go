package browsers

import (
	"strings"
	"testing"

	"vibebrowser/manager/api"
	"vibebrowser/state"
)

func TestUserNames(t *testing.T) {
	c := &Config{AgentUser: "agents"}
	plain := &Config{}
	chrome := func(opts Options) Spec { return Spec{Slug: "acme", Backend: state.BackendChrome, Opts: opts} }
	const proxy = "http://u:p@proxy.test:3128"
	tests := []struct {
		name                   string
		c                      *Config
		sp                     Spec
		root                   bool
		wantAgent, wantBrowser string
	}{
		{"chrome, agent user: one made for the store", c, chrome(Options{}), true, "agents", "vibe-b-acme"},
		{"chrome, agent user: its own", c, chrome(Options{StoreSettings: api.StoreSettings{BrowserUser: "b1"}}), true, "agents", "b1"},
		{"chrome, agent user: none named", c, chrome(Options{StoreSettings: api.StoreSettings{BrowserUser: NoUser}}), true, "agents", ""},
		{"chrome: no users", c, chrome(Options{StoreSettings: api.StoreSettings{AgentUser: NoUser}}), true, "", ""},
		{"chrome, proxy, root: one made for the store", plain, chrome(Options{StoreSettings: api.StoreSettings{Proxy: proxy}}), true, "", "vibe-b-acme"},
		{"chrome, proxy, not root: the manager's", plain, chrome(Options{StoreSettings: api.StoreSettings{Proxy: proxy}}), false, "", ""},
		{"chrome, proxy, root: none named", plain, chrome(Options{StoreSettings: api.StoreSettings{Proxy: proxy, BrowserUser: NoUser}}), true, "", ""},
		{"chrome, proxy, root: its own", plain, chrome(Options{StoreSettings: api.StoreSettings{Proxy: proxy, BrowserUser: "b1"}}), true, "", "b1"},
		{"chrome, plain, root: the manager's", plain, chrome(Options{}), true, "", ""},
		{"ziniao: no browser of ours", c, Spec{Backend: state.BackendZiniao, Opts: Options{StoreSettings: api.StoreSettings{BrowserUser: "b1"}}}, true, "agents", ""},
		{"cdp: no browser of ours", c, Spec{Backend: state.BackendCDP}, true, "agents", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := tt.c.userNames(tt.sp, tt.root); a != tt.wantAgent || b != tt.wantBrowser {
				t.Errorf("userNames(%+v, root %v) = %q, %q; want %q, %q", tt.sp.Opts, tt.root, a, b, tt.wantAgent, tt.wantBrowser)
			}
		})
	}
}

func TestManagedBrowserUser(t *testing.T) {
	long := strings.Repeat("a", 40) // the longest slug
	tests := []struct{ slug, want string }{
		{"acme", "vibe-b-acme"},
		{"store-1234567890123456789", "vibe-b-store-1234567890123456789"}, // 32: fits
		{long, "vibe-b-aaaaaaaaaaaaaaaa-e33cdf9c"},                        // sha256(slug) begins e33cdf9c
		{"acme-shop-eu-west-the-big-one", "vibe-b-acme-shop-eu-wes-f92da590"},
		{"abcdefghijklmno-pqrstuvwxyz0123", "vibe-b-abcdefghijklmno-d0480e5f"}, // the cut's trailing "-" dropped
	}
	for _, tt := range tests {
		if got := ManagedBrowserUser(tt.slug); got != tt.want || len(got) > 32 {
			t.Errorf("ManagedBrowserUser(%q) = %q (%d characters); want %q, at most 32", tt.slug, got, len(got), tt.want)
		}
	}
	// Two long slugs that begin alike get two users.
	a, b := ManagedBrowserUser(long+"x"), ManagedBrowserUser(long+"y")
	if a == b || !strings.HasPrefix(a, "vibe-b-"+strings.Repeat("a", 16)+"-") {
		t.Errorf("ManagedBrowserUser of two long slugs = %q, %q; want two names, each the prefix, 16 characters and a hash", a, b)
	}
}
