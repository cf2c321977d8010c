package browsers

import (
	"fmt"
	"os"

	"vibebrowser/osuser"
	"vibebrowser/state"
)

// DefaultBrowserUser is the user browsers run as where a store has an agent user and VIBE_BROWSER_USER says
// no other (SPEC §14).
const DefaultBrowserUser = "vibe-browser"

// Users is who a store's processes run as (SPEC §14): nil is the manager's own user.
type Users struct {
	Agent   *osuser.User // its agents (vibe-browser agent drops to it; agent.sock admits only it)
	Browser *osuser.User // its keeper and Chromium
}

// Bounded reports whether the store is an OS boundary: it has an agent user.
func (u Users) Bounded() bool { return u.Agent != nil }

// UserNames are the names a spec's options and the configuration give its agent and browser users ("" for none).
// Only a chrome store's browser is the manager's to start, so only it has a browser user: a Ziniao or cdp
// store with an agent user must not need VIBE_BROWSER_USER to exist.
func (c *Config) UserNames(sp Spec) (agent, browser string) {
	agent = pick(sp.Opts.AgentUser, c.AgentUser)
	if sp.Backend != state.BackendChrome {
		return agent, ""
	}
	browser = pick(sp.Opts.BrowserUser, "")
	if browser == "" && agent != "" {
		browser = c.BrowserUser
		if browser == "" {
			browser = DefaultBrowserUser
		}
	}
	return agent, browser
}

// pick is a store's own setting, else the default; NoUser is none.
func pick(own, def string) string {
	switch own {
	case NoUser:
		return ""
	case "":
		return def
	}
	return own
}

// Users looks up who sp's processes run as. Either user needs the manager to run as root (it starts
// processes as another user and owns the files between them); an agent user that is root, or the same as the
// browser user, is no boundary and refused.
func (c *Config) Users(sp Spec) (Users, error) {
	agent, browser := c.UserNames(sp)
	var u Users
	if agent == "" && browser == "" {
		return u, nil
	}
	if os.Geteuid() != 0 {
		return u, fmt.Errorf("%s has an agent or browser user (%s): the manager must run as root to start "+
			"processes as them, so run serve as root (vibe-browser service install as root), or clear them "+
			"with vibe-browser store set STORE --agent-user none --browser-user none and unset VIBE_AGENT_USER",
			sp.Name, describeUsers(agent, browser))
	}
	var err error
	if agent != "" {
		if u.Agent, err = osuser.Lookup(agent); err != nil {
			return Users{}, fmt.Errorf("%s: agent user: %w", sp.Name, err)
		}
	}
	if browser != "" {
		if u.Browser, err = osuser.Lookup(browser); err != nil {
			return Users{}, fmt.Errorf("%s: browser user: %w", sp.Name, err)
		}
	}
	switch {
	case u.Agent != nil && u.Agent.UID == 0, u.Browser != nil && u.Browser.UID == 0:
		return Users{}, fmt.Errorf("%s: its agent and browser users must not be root (uid 0): name unprivileged users", sp.Name)
	case u.Agent != nil && u.Browser != nil && u.Agent.UID == u.Browser.UID:
		return Users{}, fmt.Errorf("%s: its agent user and browser user are both %s: the agent could then read "+
			"the browser's cookies; give them two users", sp.Name, agent)
	}
	return u, nil
}

func describeUsers(agent, browser string) string {
	switch {
	case agent == "":
		return "browser user " + browser
	case browser == "":
		return "agent user " + agent
	}
	return "agent user " + agent + ", browser user " + browser
}
