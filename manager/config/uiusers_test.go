package config

import (
	"os"
	"os/user"
	"strconv"
	"strings"
	"testing"
)

// anotherUser is a user of this machine other than the test's own and root, for the rule's "named" case.
func anotherUser(t *testing.T) (string, int) {
	t.Helper()
	for _, name := range []string{"nobody", "daemon", "bin"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		if id, _ := strconv.Atoi(u.Uid); id != os.Getuid() && id != 0 {
			return name, id
		}
	}
	t.Skip("this machine has no user nobody, daemon or bin")
	return "", 0
}

func TestParseUIUsers(t *testing.T) {
	other, _ := anotherUser(t)
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
