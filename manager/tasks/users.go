package tasks

import (
	"context"
	"fmt"
	"os"

	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/mux/sys/osuser"
	"vibebrowser/state"
)

// SetUsers checks and sets a store's agent and browser users (SPEC §14): each of agent and browser that is
// not nil replaces the store's ("" follows the manager's default again, browsers.NoUser is none). A user
// must exist and not be root, and only a root manager takes one: it starts processes as them.
func SetUsers(backend state.Backend, opts *browsers.Options, agent, browser *string) error {
	set := func(v *string) bool { return v != nil && *v != "" && *v != browsers.NoUser }
	if !set(agent) && !set(browser) {
		if agent != nil {
			opts.AgentUser = *agent
		}
		if browser != nil {
			opts.BrowserUser = *browser
		}
		return nil
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: agent and browser users need the manager to run as root (it starts the store's "+
			"processes as them and owns the files between them); this manager runs as uid %d: run vibe-browser "+
			"serve as root (vibe-browser service install, as root)", apierr.ErrBadRequest, os.Geteuid())
	}
	if set(browser) && backend != state.BackendChrome {
		return fmt.Errorf("%w: --browser-user is for chrome stores: the manager does not start a ziniao or cdp "+
			"store's browser", apierr.ErrBadRequest)
	}
	for _, v := range []struct {
		flag string
		name *string
		dst  *string
	}{{"--agent-user", agent, &opts.AgentUser}, {"--browser-user", browser, &opts.BrowserUser}} {
		if v.name == nil {
			continue
		}
		if set(v.name) {
			u, err := osuser.Lookup(*v.name)
			if err != nil {
				return fmt.Errorf("%w: %s: %w", apierr.ErrBadRequest, v.flag, err)
			}
			if u.UID == 0 {
				return fmt.Errorf("%w: %s %s is root (uid 0): name an unprivileged user, or none", apierr.ErrBadRequest, v.flag, *v.name)
			}
		}
		*v.dst = *v.name
	}
	if opts.AgentUser != "" && opts.AgentUser == opts.BrowserUser && opts.AgentUser != browsers.NoUser {
		return fmt.Errorf("%w: the agent user and the browser user are both %s: the agent could then read the "+
			"browser's cookies; give them two users", apierr.ErrBadRequest, opts.AgentUser)
	}
	return nil
}

// CheckUsersRunnable refuses a start that could not keep the store boundary (SPEC §14): a manager not
// running as root while VIBE_AGENT_USER or a store names an agent or browser user.
func CheckUsersRunnable(ctx context.Context, cfg *config.Config, db *state.DB) error {
	if os.Geteuid() == 0 {
		return nil
	}
	if cfg.AgentUser != "" {
		return fmt.Errorf("VIBE_AGENT_USER=%s needs the manager to run as root (it starts agents and browsers as "+
			"other users and owns the files between them); this manager runs as uid %d: run vibe-browser serve as "+
			"root (vibe-browser service install, as root), or unset VIBE_AGENT_USER", cfg.AgentUser, os.Geteuid())
	}
	stores, err := db.ListStores(ctx)
	if err != nil {
		return err
	}
	bc := cfg.Browsers()
	for _, s := range stores {
		sp, err := browsers.StoreSpec(s)
		if err != nil {
			return err
		}
		if agent, browser := bc.UserNames(sp); agent != "" || browser != "" {
			return fmt.Errorf("store %s has an agent or browser user (agent %q, browser %q), which needs the manager to run as root; "+
				"this manager runs as uid %d: run vibe-browser serve as root, or clear them with "+
				"vibe-browser store set %s --agent-user none --browser-user none (as root)",
				s.Name, agent, browser, os.Geteuid(), s.Slug)
		}
	}
	return nil
}
