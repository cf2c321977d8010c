package browsers

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"sync"

	"github.com/rs/zerolog"

	"vibebrowser/manager/ziniao"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// ziniaoBackend starts store environments through the Ziniao client's local API, one account per machine.
type ziniaoBackend struct {
	cfg    *Config
	log    zerolog.Logger // component ziniao
	claims ziniao.Claims
	// clientLaunch serialises making sure the Ziniao client runs, so that concurrent starts launch it once.
	clientLaunch sync.Mutex
}

func newZiniaoBackend(cfg *Config, root zerolog.Logger) *ziniaoBackend {
	return &ziniaoBackend{cfg: cfg, log: root.With().Str("component", "ziniao").Logger()}
}

// ziniaoStore is what starting a Ziniao store needs.
type ziniaoStore struct {
	key, name string
	browser   string
	account   ziniao.Account
	port      int
}

func ziniaoStoreOf(sp Spec) (ziniaoStore, error) {
	if sp.Store == nil {
		return ziniaoStore{}, fmt.Errorf("%w: %s is not a Ziniao store", errdefs.ErrInvalid, sp.Name)
	}
	a := sp.Store.Ziniao
	return ziniaoStore{key: sp.Key, name: sp.Name, browser: sp.Store.ZiniaoBrowser, port: sp.Opts.ZiniaoPort,
		account: ziniao.Account{Company: a.Company, Username: a.Username, Password: a.Password}}, nil
}

func (z ziniaoStore) client() *ziniao.Client { return &ziniao.Client{Port: z.port, Account: z.account} }

// claim registers z under its Ziniao account (ziniao.Claims: one account per machine), as a conflict
// when another account is active.
func (b *ziniaoBackend) claim(z ziniaoStore) error {
	if err := b.claims.Claim(z.account, z.key, z.name); err != nil {
		return fmt.Errorf("%w: %w", errdefs.ErrConflict, err)
	}
	return nil
}

func (b *ziniaoBackend) unclaim(z ziniaoStore) { b.claims.Release(z.account, z.key) }

// launch starts the store's environment through the Ziniao client, with per-store stale-launch recovery.
func (b *ziniaoBackend) launch(ctx context.Context, sp Spec) (handle, error) {
	z, err := ziniaoStoreOf(sp)
	if err != nil {
		return nil, err
	}
	if err := b.claim(z); err != nil {
		return nil, err
	}
	if err := b.ensureClient(ctx, z); err != nil {
		b.unclaim(z)
		return nil, fmt.Errorf("%w: %w", errdefs.ErrUnavailable, err)
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
func (b *ziniaoBackend) adopt(ctx context.Context, sp Spec, rec state.BrowserSession) (handle, error) {
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
	run, err := ziniao.Reconnect(ctx, z.client(), z.browser, port, b.log.With().Str("browser", z.key).Logger())
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
