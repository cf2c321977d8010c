package manager

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"vibebrowser/manager/ziniao"
	"vibebrowser/state"
)

// ziniaoTarget is what starting a Ziniao store needs.
type ziniaoTarget struct {
	browser string
	account state.ZiniaoAccount
	port    int
}

// accountKey names a Ziniao account for the one-account-per-machine rule.
func (z *ziniaoTarget) accountKey() string { return z.account.Company + "/" + z.account.Username }

func (z *ziniaoTarget) client() *ziniao.Client {
	return &ziniao.Client{Port: z.port, Account: ziniao.Account{Company: z.account.Company,
		Username: z.account.Username, Password: z.account.Password}}
}

// claimZiniao registers t's store under its Ziniao account, refusing when another account has stores
// starting or running: the Ziniao client serves one account per machine. Stores of one account run
// concurrently. The claim is held until releaseZiniao, not a lock held across the start.
func (m *Manager) claimZiniao(t target) error {
	account := t.ziniao.accountKey()
	m.zmu.Lock()
	defer m.zmu.Unlock()
	for other, stores := range m.zclaims {
		if other == account || len(stores) == 0 {
			continue
		}
		names := make([]string, 0, len(stores))
		for _, name := range stores {
			names = append(names, name)
		}
		sort.Strings(names)
		return fmt.Errorf("%w: Ziniao account %s is active on this machine (stores %s) and the Ziniao client serves one "+
			"account at a time; stop those stores first (vibe-browser browser stop STORE) to start %s of account %s",
			state.ErrConflict, other, strings.Join(names, ", "), t.name, account)
	}
	if m.zclaims[account] == nil {
		m.zclaims[account] = map[string]string{}
	}
	m.zclaims[account][t.key] = t.name
	return nil
}

func (m *Manager) releaseZiniao(t target) {
	m.zmu.Lock()
	defer m.zmu.Unlock()
	account := t.ziniao.accountKey()
	delete(m.zclaims[account], t.key)
	if len(m.zclaims[account]) == 0 {
		delete(m.zclaims, account)
	}
}

// launchZiniao starts t's environment through the Ziniao client, with per-store stale-launch recovery.
func (m *Manager) launchZiniao(ctx context.Context, t target) (runner, error) {
	if err := m.claimZiniao(t); err != nil {
		return nil, err
	}
	if err := m.ensureZiniaoClient(ctx, t); err != nil {
		m.releaseZiniao(t)
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	// Every attempt must fit in the start timeout, with room for the stopBrowser between attempts.
	ready := ziniao.DefaultReadyTimeout
	if m.cfg.StartTimeout > 0 {
		ready = min(ready, m.cfg.StartTimeout/(ziniao.DefaultAttempts+1))
	}
	run, err := ziniao.Start(ctx, t.ziniao.client(), t.ziniao.browser, ziniao.StartOptions{
		ReadyTimeout: ready,
		Log:          m.root.With().Str("component", "ziniao").Str("browser", t.key).Logger(),
	})
	if err != nil {
		m.releaseZiniao(t)
		return nil, err
	}
	return &claimedRunner{Runner: run, release: func() { m.releaseZiniao(t) }}, nil
}

// ensureZiniaoClient starts the Ziniao client in WebDriver mode when nothing answers on t's port (see
// ziniao.EnsureRunning); its output goes to run/ziniao-client.log. The client is shared by every store and
// outlives the manager: nothing here ever stops it.
func (m *Manager) ensureZiniaoClient(ctx context.Context, t target) error {
	m.zlaunch.Lock()
	defer m.zlaunch.Unlock()
	wait := ziniao.DefaultLaunchWait
	if m.cfg.StartTimeout > 0 {
		wait = min(wait, m.cfg.StartTimeout/2)
	}
	started, err := ziniao.EnsureRunning(ctx, t.ziniao.client(), m.cfg.ZiniaoClient, wait,
		m.cfg.path("run", "ziniao-client.log"))
	if started {
		m.log.Info().Strs("command", m.cfg.ZiniaoClient).Int("port", t.ziniao.client().Port).Err(err).
			Msg("started the Ziniao client in WebDriver mode")
	}
	return err
}

// adoptZiniao reconnects to an environment a previous manager left running on the recorded endpoint.
func (m *Manager) adoptZiniao(ctx context.Context, t target, endpoint string) (runner, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("recorded endpoint %q has no port", endpoint)
	}
	if err := m.claimZiniao(t); err != nil {
		return nil, err
	}
	log := m.root.With().Str("component", "ziniao").Str("browser", t.key).Logger()
	run, err := ziniao.Reconnect(ctx, t.ziniao.client(), t.ziniao.browser, port, log)
	if err != nil {
		m.releaseZiniao(t)
		return nil, err
	}
	return &claimedRunner{Runner: run, release: func() { m.releaseZiniao(t) }}, nil
}

// claimedRunner releases its account claim once stopped.
type claimedRunner struct {
	*ziniao.Runner
	release func()
}

func (r *claimedRunner) Stop(ctx context.Context) error {
	defer r.release()
	return r.Runner.Stop(ctx)
}
