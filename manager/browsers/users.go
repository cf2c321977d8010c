package browsers

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"vibebrowser/mux/sys/osuser"
	"vibebrowser/state"
)

// Users is who a store's processes run as (SPEC §14): nil is the manager's own user.
type Users struct {
	Agent   *osuser.User // its agents (vibe-browser agent drops to it; agent.sock admits only it)
	Browser *osuser.User // its keeper and Chromium
}

// Bounded reports whether the store is an OS boundary: it has an agent user.
func (u Users) Bounded() bool { return u.Agent != nil }

// The browser users the manager makes (SPEC §20): one per store, so no two stores' browsers read each other's
// profiles or use each other's proxy forwarders.
const (
	managedPrefix = "vibe-b-"
	maxUserName   = 32 // the longest name useradd takes on Linux
	// A slug too long for the prefix keeps this many of its first characters, then "-" and hashHex hex digits.
	keptSlug = maxUserName - len(managedPrefix) - 1 - hashHex
	hashHex  = 8
)

// ManagedBrowserUser is the name of the browser user the manager makes for the store of slug: vibe-b-<slug>.
// Where that is longer than Linux's 32 characters (a slug over 25), it is vibe-b-, the slug's first 16
// characters (a "-" or "_" they end in dropped), "-" and the first 8 hex digits of the slug's SHA-256: the same
// slug always gets the same name, and two long slugs that begin alike get two.
func ManagedBrowserUser(slug string) string {
	if len(managedPrefix)+len(slug) <= maxUserName {
		return managedPrefix + slug
	}
	sum := sha256.Sum256([]byte(slug))
	return managedPrefix + strings.TrimRight(slug[:keptSlug], "-_") + "-" + hex.EncodeToString(sum[:])[:hashHex]
}

// UserNames are the names a spec's options and the configuration give its agent and browser users ("" for
// none). Only a chrome store's browser is the manager's to start, so only it has a browser user. A store
// that names its own browser user runs its browser as that one; one that names none gets the manager-made
// ManagedBrowserUser when it has an agent user, or a proxy under a root manager (SPEC §20: two stores never
// share a browser user when either has a proxy or an agent user); NoUser is the manager's own user.
func (c *Config) UserNames(sp Spec) (agent, browser string) {
	return c.userNames(sp, os.Geteuid() == 0)
}

func (c *Config) userNames(sp Spec, root bool) (agent, browser string) {
	agent = pick(sp.Opts.AgentUser, c.AgentUser)
	if sp.Backend != state.BackendChrome {
		return agent, ""
	}
	switch sp.Opts.BrowserUser {
	case NoUser:
		return agent, ""
	case "":
	default:
		return agent, sp.Opts.BrowserUser
	}
	if agent != "" || root && sp.Opts.Proxy != "" {
		return agent, ManagedBrowserUser(sp.Slug)
	}
	return agent, ""
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

// Users looks up who sp's processes run as, making the store's ManagedBrowserUser when that is its browser
// user and there is none yet. Either user needs the manager to run as root (it starts processes as another
// user and owns the files between them); an agent user that is root, or the same as the browser user, is no
// boundary and refused. What needs only the agent user asks Agent, which makes nothing.
func (c *Config) Users(sp Spec) (Users, error) {
	agent, browser := c.UserNames(sp)
	if agent == "" && browser == "" {
		return Users{}, nil
	}
	if os.Geteuid() != 0 {
		return Users{}, needsRoot(sp, agent, browser)
	}
	var u Users
	var err error
	if u.Agent, err = c.Agent(sp); err != nil {
		return Users{}, err
	}
	if browser != "" {
		lookup := osuser.Lookup
		if browser == ManagedBrowserUser(sp.Slug) {
			lookup = osuser.Make // the manager's own: made at the first start that needs it
		}
		if u.Browser, err = lookup(browser); err != nil {
			return Users{}, fmt.Errorf("%s: browser user: %w", sp.Name, err)
		}
	}
	switch {
	case u.Browser != nil && u.Browser.UID == 0:
		return Users{}, fmt.Errorf("%s: its browser user %s is root (uid 0): name an unprivileged user", sp.Name, browser)
	case u.Agent != nil && u.Browser != nil && u.Agent.UID == u.Browser.UID:
		return Users{}, fmt.Errorf("%s: its agent user and browser user are both %s: the agent could then read "+
			"the browser's cookies; give them two users", sp.Name, agent)
	}
	return u, nil
}

// Agent looks up sp's agent user (nil: its agents run as the manager's own user), for what concerns only its
// agents (their folders, wrapper, downloads and token): unlike Users it makes no browser user.
func (c *Config) Agent(sp Spec) (*osuser.User, error) {
	agent := pick(sp.Opts.AgentUser, c.AgentUser)
	if agent == "" {
		return nil, nil
	}
	if os.Geteuid() != 0 {
		return nil, needsRoot(sp, agent, "")
	}
	u, err := osuser.Lookup(agent)
	if err != nil {
		return nil, fmt.Errorf("%s: agent user: %w", sp.Name, err)
	}
	if u.UID == 0 {
		return nil, fmt.Errorf("%s: its agent user %s is root (uid 0): name an unprivileged user", sp.Name, agent)
	}
	return u, nil
}

// needsRoot is the refusal of a store's users under a manager that is not root.
func needsRoot(sp Spec, agent, browser string) error {
	return fmt.Errorf("%s has an agent or browser user (%s): the manager must run as root to start "+
		"processes as them, so run serve as root (vibe-browser service install as root), or clear them "+
		"with vibe-browser store set STORE --agent-user none --browser-user none and unset VIBE_AGENT_USER",
		sp.Name, describeUsers(agent, browser))
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

// browserUser is who h's Chromium runs as, for its mux: for a browser on the pipe, its keeper's folder says
// (an adopted browser may run as the browser user of an earlier setting); for one on a port, the store's
// browser user if this manager launched it. nil is the manager's own user, or a browser of someone else's
// (Ziniao, cdp).
func (c *Config) browserUser(sp Spec, h handle, users Users) (*osuser.User, error) {
	if sp.Backend != state.BackendChrome {
		return nil, nil
	}
	socket, onPipe := strings.CutPrefix(h.Endpoint(), "unix:")
	switch {
	case !onPipe && h.Adopted():
		return nil, nil // launched on a port by a manager that ran no browser as another user
	case !onPipe:
		return users.Browser, nil
	}
	dir := filepath.Dir(filepath.Clean(socket))
	if dir == filepath.Clean(c.path("run")) {
		return nil, nil
	}
	if name := filepath.Base(dir); users.Browser == nil || users.Browser.Name != name {
		return osuser.Lookup(name)
	}
	return users.Browser, nil
}
