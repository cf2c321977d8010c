package config

import (
	"strings"
	"testing"

	"vibebrowser/integration/testkit"
)

func TestParseUIUsers(t *testing.T) {
	other, _ := testkit.OtherUser(t)
	tests := []struct {
		raw, agent string
		want       string // the names, comma-joined
		err        string // a fragment of the refusal
	}{
		{"", "", "", ""},
		{" " + other + " , root,,", "", other + ",root", ""},
		{other + "," + other, "", other, ""},
		{"no-such-user-vbtest", "", "", "no-such-user-vbtest is no user of this machine"},
		{other, other, "", "the agents' user (VIBE_AGENT_USER)"},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, err := parseUIUsers(tt.raw, tt.agent)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "VIBE_UI_USERS") {
					t.Errorf("parseUIUsers(%q, %q) = %q, %v; want a refusal naming VIBE_UI_USERS and %q", tt.raw, tt.agent, got, err, tt.err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != tt.want {
				t.Errorf("parseUIUsers(%q, %q) = %q, %v; want %q", tt.raw, tt.agent, got, err, tt.want)
			}
		})
	}
}
