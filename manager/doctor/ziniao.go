package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"vibebrowser/manager/ziniao"
	"vibebrowser/state"
)

// ziniao asks, for each Ziniao store, whether the Ziniao client answers on the store's port and accepts its
// account (getBrowserList, what a start asks first).
func (m *machine) ziniao(ctx context.Context) []Check {
	var checks []Check
	for _, s := range m.storesOf(state.BackendZiniao) {
		name := "ziniao:" + s.Slug
		f, err := m.cfg.StoreFacts(s)
		if err != nil {
			checks = append(checks, fail(name, err.Error(), "remove the store and add it again"))
			continue
		}
		checks = append(checks, m.pingZiniao(ctx, name, f.Ziniao))
	}
	return checks
}

func (m *machine) pingZiniao(ctx context.Context, name string, c *ziniao.Client) Check {
	port := c.Port
	if port == 0 {
		port = ziniao.DefaultPort
	}
	account := c.Account.Company + "/" + c.Account.Username
	err := c.Ping(ctx)
	var apiErr *ziniao.APIError
	switch {
	case err == nil:
		return ok(name, fmt.Sprintf("the Ziniao client answers on port %d and accepts account %s", port, account))
	case errors.Is(err, ziniao.ErrWebDriverNotEnabled):
		return fail(name, fmt.Sprintf("the Ziniao client on port %d refuses account %s: %v", port, account, ziniao.ErrWebDriverNotEnabled),
			"the account owner enables WebDriver on the Ziniao Open Platform")
	case errors.As(err, &apiErr):
		return fail(name, fmt.Sprintf("the Ziniao client on port %d refuses account %s: %v", port, account, err),
			"check the store's Ziniao company, username and password (remove the store and add it again with the right ones)")
	case len(m.cfg.ZiniaoClient) > 0:
		return warn(name, fmt.Sprintf("the Ziniao client does not answer on port %d (%v); the manager starts it (%s) when the store's browser starts",
			port, err, strings.Join(m.cfg.ZiniaoClient, " ")), "nothing, or start the Ziniao client now to check the account")
	}
	return fail(name, fmt.Sprintf("the Ziniao client does not answer on port %d (%v), and the manager cannot start it here", port, err),
		fmt.Sprintf("start the Ziniao client in WebDriver mode (--run_type=web_driver --ipc_type=http --port=%d), or set VIBE_ZINIAO_CLIENT to its absolute path; under WSL start it on Windows", port))
}
