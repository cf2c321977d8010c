package browsers

import (
	"testing"

	"vibebrowser/state"
)

func TestUserNames(t *testing.T) {
	c := &Config{AgentUser: "agents"}
	tests := []struct {
		name                   string
		sp                     Spec
		wantAgent, wantBrowser string
	}{
		{"chrome: the default browser user", Spec{Backend: state.BackendChrome}, "agents", DefaultBrowserUser},
		{"chrome: its own", Spec{Backend: state.BackendChrome, Opts: Options{BrowserUser: "b1"}}, "agents", "b1"},
		{"chrome: none", Spec{Backend: state.BackendChrome, Opts: Options{AgentUser: NoUser}}, "", ""},
		{"ziniao: no browser of ours", Spec{Backend: state.BackendZiniao, Opts: Options{BrowserUser: "b1"}}, "agents", ""},
		{"cdp: no browser of ours", Spec{Backend: state.BackendCDP}, "agents", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := c.UserNames(tt.sp); a != tt.wantAgent || b != tt.wantBrowser {
				t.Errorf("UserNames(%+v) = %q, %q; want %q, %q", tt.sp.Opts, a, b, tt.wantAgent, tt.wantBrowser)
			}
		})
	}
}
