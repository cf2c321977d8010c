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
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/service"
	"vibebrowser/mux/sys/osuser"
	"vibebrowser/state"
)

// The store boundary (SPEC §14, §20): whether stores are an OS boundary at all, for each store with an agent
// user whether its users exist and can reach what they must, and whether each browser user is one store's own.

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

// boundary is the one check of the mode, then one per store with an agent user ("boundary:<slug>"), then one
// per browser user that two stores share where that is no boundary ("browser-user:<user>").
func (m *machine) boundary() []Check {
	checks := []Check{m.boundaryMode()}
	if m.bounded() {
		for _, s := range m.sortedStores() {
			if agent, browser, err := m.cfg.StoreUsers(s); err == nil && agent != "" {
				checks = append(checks, m.storeBoundary(s.Slug, agent, browser))
			}
		}
	}
	return append(checks, m.sharedBrowserUsers()...)
}

// boundaryMode says whether stores are an OS boundary at all.
func (m *machine) boundaryMode() Check {
	switch {
	case !m.bounded():
		return warn("boundary", "no store has an agent user: agents run as the manager's user, so the "+
			"boundary between stores is by convention only (an agent could read another store's cookies)",
			"as root: useradd --system --no-create-home --shell /usr/sbin/nologin vibe-agent-STORE; "+
				"vibe-browser store set STORE --agent-user vibe-agent-STORE (a root manager: vibe-browser service install)")
	case os.Geteuid() != 0:
		return fail("boundary", fmt.Sprintf("stores name agent users, which need the manager to run as root; "+
			"this doctor runs as uid %d", os.Geteuid()), "run the manager (and this doctor) as root: sudo vibe-browser service install")
	}
	return ok("boundary", "stores with an agent user are an OS boundary: their agents run as that user")
}

// sortedStores is every store, by slug.
func (m *machine) sortedStores() []state.Store {
	stores := slices.Clone(m.stores)
	sort.Slice(stores, func(i, j int) bool { return stores[i].Slug < stores[j].Slug })
	return stores
}

// sharedBrowserUsers fails each browser user that two chrome stores share where either has an agent user or
// a proxy (SPEC §20): the one's browser could read the other's profile and send its traffic out through the
// other's proxy forwarder, which serves its browser's uid. Under a root manager, a store whose browser runs as
// the manager's own user (--browser-user none) shares root with every other such store.
func (m *machine) sharedBrowserUsers() []Check {
	type runner struct {
		slug     string
		boundary bool // it has an agent user or a proxy
	}
	byUser := map[string][]runner{}
	for _, s := range m.sortedStores() {
		if s.Backend != state.BackendChrome {
			continue
		}
		agent, browser, err := m.cfg.StoreUsers(s)
		opts, oerr := browsers.DecodeOptions(s)
		if err != nil || oerr != nil {
			continue
		}
		if browser == "" {
			if os.Geteuid() != 0 {
				continue // a manager that is not root runs every browser as itself, and makes no users
			}
			browser = "root"
		}
		byUser[browser] = append(byUser[browser], runner{slug: s.Slug, boundary: agent != "" || opts.Proxy != ""})
	}
	var checks []Check
	for _, user := range slices.Sorted(maps.Keys(byUser)) {
		runners := byUser[user]
		if len(runners) < 2 || !slices.ContainsFunc(runners, func(r runner) bool { return r.boundary }) {
			continue
		}
		var slugs, fixes []string
		for i, r := range runners {
			slugs = append(slugs, r.slug)
			if i > 0 {
				fixes = append(fixes, "vibe-browser store set "+r.slug+` --browser-user ""`)
			}
		}
		checks = append(checks, fail("browser-user:"+user, fmt.Sprintf("stores %s all run their browsers as %s, "+
			"and a store with an agent user or a proxy must have a browser user of its own: one store's browser "+
			"could read the others' profiles and send its traffic through their proxies", strings.Join(slugs, ", "), user),
			"give each store its own browser user: "+strings.Join(fixes, "; ")+" (the manager then makes vibe-b-<slug> "+
				"for it), or --browser-user USER naming a user no other store has"))
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
		if err != nil && n == browser && n == browsers.ManagedBrowserUser(slug) {
			browser += " (the manager makes it at the browser's first start)"
			continue
		}
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
