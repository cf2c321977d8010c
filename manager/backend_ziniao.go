package manager

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rs/zerolog"

	"vibebrowser/manager/ziniao"
	"vibebrowser/state"
)

// ziniaoBackend starts store environments through the Ziniao client's local API, one account per machine.
type ziniaoBackend struct {
	cfg *Config
	log zerolog.Logger // component ziniao

	mu     sync.Mutex                   // mu guards claims
	claims map[string]map[string]string // Ziniao account -> store key -> name, for stores starting or running
	// clientLaunch serialises making sure the Ziniao client runs, so that concurrent starts launch it once.
	clientLaunch sync.Mutex
}

func newZiniaoBackend(cfg *Config, root zerolog.Logger) *ziniaoBackend {
	return &ziniaoBackend{cfg: cfg, log: root.With().Str("component", "ziniao").Logger(), claims: map[string]map[string]string{}}
}

// ziniaoStore is what starting a Ziniao store needs.
type ziniaoStore struct {
	key, name string
	browser   string
	account   state.ZiniaoAccount
	port      int
}

func ziniaoStoreOf(sp spec) (ziniaoStore, error) {
	if sp.store == nil {
		return ziniaoStore{}, fmt.Errorf("%w: %s is not a Ziniao store", ErrBadRequest, sp.name)
	}
	return ziniaoStore{key: sp.key, name: sp.name, browser: sp.store.ZiniaoBrowser, account: sp.store.Ziniao,
		port: sp.opts.ZiniaoPort}, nil
}

// accountKey names a Ziniao account for the one-account-per-machine rule.
func (z ziniaoStore) accountKey() string { return z.account.Company + "/" + z.account.Username }

func (z ziniaoStore) client() *ziniao.Client {
	return &ziniao.Client{Port: z.port, Account: ziniao.Account{Company: z.account.Company,
		Username: z.account.Username, Password: z.account.Password}}
}

// claim registers z under its Ziniao account, refusing when another account has stores starting or
// running: the Ziniao client serves one account per machine. Stores of one account run concurrently. The
// claim is held until unclaim, not a lock held across the start.
func (b *ziniaoBackend) claim(z ziniaoStore) error {
	account := z.accountKey()
	b.mu.Lock()
	defer b.mu.Unlock()
	for other, stores := range b.claims {
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
			state.ErrConflict, other, strings.Join(names, ", "), z.name, account)
	}
	if b.claims[account] == nil {
		b.claims[account] = map[string]string{}
	}
	b.claims[account][z.key] = z.name
	return nil
}

func (b *ziniaoBackend) unclaim(z ziniaoStore) {
	b.mu.Lock()
	defer b.mu.Unlock()
	account := z.accountKey()
	delete(b.claims[account], z.key)
	if len(b.claims[account]) == 0 {
		delete(b.claims, account)
	}
}

// launch starts the store's environment through the Ziniao client, with per-store stale-launch recovery.
func (b *ziniaoBackend) launch(ctx context.Context, sp spec) (handle, error) {
	z, err := ziniaoStoreOf(sp)
	if err != nil {
		return nil, err
	}
	if err := b.claim(z); err != nil {
		return nil, err
	}
	if err := b.ensureClient(ctx, z); err != nil {
		b.unclaim(z)
		return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	// Every attempt must fit in the start timeout, with room for the stopBrowser between attempts.
	ready := ziniao.DefaultReadyTimeout
	if b.cfg.StartTimeout > 0 {
		ready = min(ready, b.cfg.StartTimeout/(ziniao.DefaultAttempts+1))
	}
	run, err := ziniao.Start(ctx, z.client(), z.browser, ziniao.StartOptions{
		ReadyTimeout: ready,
		Log:          b.log.With().Str("browser", z.key).Logger(),
	})
	if err != nil {
		b.unclaim(z)
		return nil, err
	}
	return &claimedRunner{Runner: run, unclaim: func() { b.unclaim(z) }}, nil
}

// ensureClient starts the Ziniao client in WebDriver mode when nothing answers on z's port (see
// ziniao.EnsureRunning); its output goes to run/ziniao-client.log. The client is shared by every store and
// outlives the manager: nothing here ever stops it.
func (b *ziniaoBackend) ensureClient(ctx context.Context, z ziniaoStore) error {
	b.clientLaunch.Lock()
	defer b.clientLaunch.Unlock()
	wait := ziniao.DefaultLaunchWait
	if b.cfg.StartTimeout > 0 {
		wait = min(wait, b.cfg.StartTimeout/2)
	}
	started, err := ziniao.EnsureRunning(ctx, z.client(), b.cfg.ZiniaoClient, wait, b.cfg.path("run", "ziniao-client.log"))
	if started {
		b.log.Info().Strs("command", b.cfg.ZiniaoClient).Int("port", z.client().Port).Err(err).
			Msg("started the Ziniao client in WebDriver mode")
	}
	return err
}

// adopt reconnects to an environment a previous manager left running on the recorded endpoint.
func (b *ziniaoBackend) adopt(ctx context.Context, sp spec, rec state.BrowserSession) (handle, error) {
	z, err := ziniaoStoreOf(sp)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(rec.CDPEndpoint)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return nil, fmt.Errorf("recorded endpoint %q has no port", rec.CDPEndpoint)
	}
	if err := b.claim(z); err != nil {
		return nil, err
	}
	log := b.log.With().Str("browser", z.key).Logger()
	run, err := ziniao.Reconnect(log.WithContext(ctx), z.client(), z.browser, port)
	if err != nil {
		b.unclaim(z)
		return nil, err
	}
	return &claimedRunner{Runner: run, unclaim: func() { b.unclaim(z) }}, nil
}

// crashed: an environment's death is the Ziniao client's business; the manager never relaunches it.
func (b *ziniaoBackend) crashed(handle) bool { return false }
func (b *ziniaoBackend) relaunchable() bool  { return false }

// claimedRunner releases its account claim once stopped.
type claimedRunner struct {
	*ziniao.Runner
	unclaim func()
}

func (r *claimedRunner) Stop(ctx context.Context) error {
	defer r.unclaim()
	return r.Runner.Stop(ctx)
}
