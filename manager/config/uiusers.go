package config

import (
	"fmt"
	"os/user"
	"slices"
	"strings"
)

// parseUIUsers reads VIBE_UI_USERS: user names, comma-separated, each a user of this machine. The agents'
// default user (VIBE_AGENT_USER) is refused at once; a store's own agent or browser user is refused when it
// connects (tasks.UIUsers.Allow), since stores change while the manager runs.
func parseUIUsers(raw, agentUser string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(raw, ",") {
		n = strings.TrimSpace(n)
		if n == "" || slices.Contains(names, n) {
			continue
		}
		if n == agentUser {
			return nil, fmt.Errorf("VIBE_UI_USERS=%q names %s, the agents' user (VIBE_AGENT_USER): the web UI never serves "+
				"an agent, since it would watch and drive every store's tabs; name the people's users only", raw, n)
		}
		if _, err := user.Lookup(n); err != nil {
			return nil, fmt.Errorf("VIBE_UI_USERS=%q: %s is no user of this machine (%v); name existing users, "+
				"comma-separated (the manager's own user and root need no naming)", raw, n, err)
		}
		names = append(names, n)
	}
	return names, nil
}
