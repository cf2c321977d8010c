package doctor

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"vibebrowser/manager/api"
	"vibebrowser/manager/service"
	"vibebrowser/osuser"
)

// The store boundary (SPEC §14): whether stores are an OS boundary at all, and for each store with an agent
// user whether its users exist, whether they can reach what they must, and whether its browser user is its own.

// bounded reports whether any store (or VIBE_AGENT_USER) names an agent user.
func (m *machine) bounded() bool { return m.namesUsers(false) }

// namesUsers reports whether VIBE_AGENT_USER or any store names an agent user, or, with browsers too, a
// browser user: either way the home's shared folders are enterable by other users.
func (m *machine) namesUsers(browsers bool) bool {
	if m.cfg.AgentUser != "" {
		return true
	}
	for _, s := range m.stores {
		if agent, browser, err := m.cfg.StoreUsers(s); err == nil && (agent != "" || browsers && browser != "") {
			return true
		}
	}
	return false
}

// boundary is the one check of the mode, then one per store with an agent user ("boundary:<slug>").
func (m *machine) boundary() []Check {
	if !m.bounded() {
		return []Check{warn("boundary", "no store has an agent user: agents run as the manager's user, so the "+
			"boundary between stores is by convention only (an agent could read another store's cookies)",
			"as root: useradd --system --no-create-home --shell /usr/sbin/nologin vibe-agent-STORE; "+
				"vibe-browser store set STORE --agent-user vibe-agent-STORE (a root manager: vibe-browser service install)")}
	}
	checks := []Check{ok("boundary", "stores with an agent user are an OS boundary: their agents run as that user")}
	if os.Geteuid() != 0 {
		checks[0] = fail("boundary", fmt.Sprintf("stores name agent users, which need the manager to run as root; "+
			"this doctor runs as uid %d", os.Geteuid()), "run the manager (and this doctor) as root: sudo vibe-browser service install")
	}
	browsersOf := map[string][]string{} // browser user → the slugs of the stores whose browsers run as it
	stores := slices.Clone(m.stores)
	sort.Slice(stores, func(i, j int) bool { return stores[i].Slug < stores[j].Slug })
	for _, s := range stores {
		agent, browser, err := m.cfg.StoreUsers(s)
		if err != nil || agent == "" {
			continue
		}
		if browser != "" {
			browsersOf[browser] = append(browsersOf[browser], s.Slug)
		}
		checks = append(checks, m.storeBoundary(s.Slug, agent, browser))
	}
	for _, user := range slices.Sorted(maps.Keys(browsersOf)) {
		if slugs := browsersOf[user]; len(slugs) > 1 {
			checks = append(checks, warn("browser-user:"+user, fmt.Sprintf("stores %s all run their browsers as %s: "+
				"one store's browser could read the others' profiles", strings.Join(slugs, ", "), user),
				"give each a browser user of its own: useradd --system --no-create-home --shell /usr/sbin/nologin "+
					"vibe-browser-"+slugs[1]+"; vibe-browser store set "+slugs[1]+" --browser-user vibe-browser-"+slugs[1]))
		}
	}
	return checks
}

// storeBoundary checks one bounded store: both users exist, neither is root, and the agent user can reach
// the agents' socket (every folder above it enterable).
func (m *machine) storeBoundary(slug, agent, browser string) Check {
	name := "boundary:" + slug
	users := map[string]*osuser.User{}
	for _, n := range []string{agent, browser} {
		if n == "" {
			continue
		}
		u, err := osuser.Lookup(n)
		if err != nil {
			return fail(name, err.Error(), "useradd --system --no-create-home --shell /usr/sbin/nologin "+n)
		}
		if u.UID == 0 {
			return fail(name, n+" is root (uid 0): it would be no boundary", "vibe-browser store set "+slug+" --agent-user USER --browser-user USER, with unprivileged users")
		}
		users[n] = u
	}
	sock := api.AgentSocketPath(m.cfg.Home)
	if _, err := os.Stat(sock); err == nil {
		if err := users[agent].MayRead(sock); err != nil {
			return fail(name, fmt.Sprintf("agent user %s cannot reach %s: %v", agent, sock, err),
				"let every folder above the home be entered: chmod o+x on each (e.g. chmod o+x "+
					service.ShellQuote(filepath.Dir(m.cfg.Home))+"), or set VIBE_HOME to a folder under /var/lib")
		}
	}
	detail := "agents run as " + agent
	if browser != "" {
		detail += ", its browser as " + browser
	}
	return ok(name, detail)
}
