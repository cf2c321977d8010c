package doctor

import (
	"fmt"
	"strings"
)

// uiUsers warns of each user VIBE_UI_USERS names that is a store's agent or browser user: the UI refuses
// it at every connection (issue 37), so the person who meant to use it is turned away. No check without
// VIBE_UI_USERS.
func (m *machine) uiUsers() []Check {
	if len(m.cfg.UIUsers) == 0 {
		return nil
	}
	roles := map[string]string{}
	for _, s := range m.sortedStores() {
		agent, browser, err := m.cfg.StoreUsers(s)
		if err != nil {
			continue
		}
		if agent != "" {
			roles[agent] = "store " + s.Slug + "'s agent user"
		}
		if browser != "" {
			roles[browser] = "store " + s.Slug + "'s browser user"
		}
	}
	var bad []string
	for _, n := range m.cfg.UIUsers {
		if role, ok := roles[n]; ok {
			bad = append(bad, n+" ("+role+")")
		}
	}
	if len(bad) > 0 {
		return []Check{warn("ui-users", fmt.Sprintf("VIBE_UI_USERS names %s: the web UI never serves a store's "+
			"agent or browser user (it would watch and drive every store's tabs), so it refuses them", strings.Join(bad, ", ")),
			"name only the people's own users in VIBE_UI_USERS, and give the stores users of their own")}
	}
	return []Check{ok("ui-users", "the web UI also serves "+strings.Join(m.cfg.UIUsers, ", ")+" (VIBE_UI_USERS)")}
}
