package tasks

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"time"

	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/state"
)

// Who may use the web UI (SPEC §11, issue 37): the manager's own user, root, and the users VIBE_UI_USERS
// names; never a store's agent or browser user, even one VIBE_UI_USERS names, since whoever holds the UI
// watches and drives every store's tabs. The UI reads each connection's user from the kernel (ui/peer.go).

// UIUsers decides who may use the web UI.
type UIUsers struct {
	own   int            // the manager's uid
	named map[int]string // VIBE_UI_USERS, by uid
	// storeUsers names every store's agent and browser users (and the web browser's), each with what it
	// is ("store acme's agent user"), as the manager would start them now.
	storeUsers func(ctx context.Context) (map[string]string, error)
}

// NewUIUsers is the manager's rule, with VIBE_UI_USERS looked up now (FromEnv checked that each exists).
func NewUIUsers(cfg *config.Config, db *state.DB, fleet *browsers.Fleet) UIUsers {
	u := UIUsers{own: os.Getuid(), named: map[int]string{}, storeUsers: func(ctx context.Context) (map[string]string, error) {
		return storeUserNames(ctx, cfg, db, fleet)
	}}
	for _, n := range cfg.UIUsers {
		if found, err := user.Lookup(n); err == nil {
			if id, err := strconv.Atoi(found.Uid); err == nil {
				u.named[id] = n
			}
		}
	}
	return u
}

// storeUserNames names the users the manager runs stores' agents and browsers as: VIBE_AGENT_USER, and each
// store's (the web browser's too) own or made-for-it agent and browser users.
func storeUserNames(ctx context.Context, cfg *config.Config, db *state.DB, fleet *browsers.Fleet) (map[string]string, error) {
	out := map[string]string{}
	if cfg.AgentUser != "" {
		out[cfg.AgentUser] = "the agents' user (VIBE_AGENT_USER)"
	}
	stores, err := db.ListStores(ctx)
	if err != nil {
		return nil, err
	}
	for _, s := range stores {
		agent, browser, err := cfg.StoreUsers(s)
		if err != nil {
			continue // a store whose users cannot be named runs nothing as them
		}
		if agent != "" {
			out[agent] = "store " + s.Slug + "'s agent user"
		}
		if browser != "" {
			out[browser] = "store " + s.Slug + "'s browser user"
		}
	}
	if web, err := fleet.WebSpec(ctx); err == nil {
		bc := cfg.Browsers()
		agent, browser := bc.UserNames(web)
		if agent != "" {
			out[agent] = "the web browser's agent user"
		}
		if browser != "" {
			out[browser] = "the web browser's browser user"
		}
	}
	return out, nil
}

// Allow is nil when uid may use the UI, else why not, for the person at the refused end.
func (u UIUsers) Allow(uid int) error {
	who := "uid " + strconv.Itoa(uid)
	name := ""
	if found, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		name = found.Username
		who = name + " (uid " + strconv.Itoa(uid) + ")"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	stores, err := u.storeUsers(ctx)
	if err != nil {
		return fmt.Errorf("this connection comes from %s, and the manager could not list its stores' users to check it: %v. "+
			"Try again; the manager's log says more", who, err)
	}
	if role, ok := stores[name]; ok && name != "" {
		also := ""
		if _, listed := u.named[uid]; listed {
			also = " (VIBE_UI_USERS names this one, which changes nothing)"
		}
		return fmt.Errorf("this connection comes from %s, %s. The web UI never serves a store's agent or browser user%s: "+
			"whoever holds the UI watches and drives every store's tabs", who, role, also)
	}
	if uid == u.own || uid == 0 {
		return nil
	}
	if _, ok := u.named[uid]; ok {
		return nil
	}
	return fmt.Errorf("this connection comes from %s. The web UI serves only the manager's own user (%s), root and the users "+
		"VIBE_UI_USERS names (%s). To let %s in, add it to VIBE_UI_USERS in the manager's environment and restart the manager",
		who, userName(u.own), u.namedList(), name)
}

// namedList is VIBE_UI_USERS for a person: "alice, bob", or "none".
func (u UIUsers) namedList() string {
	names := make([]string, 0, len(u.named))
	for _, n := range u.named {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "none"
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// userName is uid's name, or "uid N" for one without.
func userName(uid int) string {
	if found, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return found.Username
	}
	return "uid " + strconv.Itoa(uid)
}
