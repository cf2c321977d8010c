package browsers

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/rs/zerolog"

	"vibebrowser/manager/chrome"
	"vibebrowser/manager/logins"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// chromeBackend launches Chromium itself, on the store's profile.
type chromeBackend struct {
	cfg *Config
	db  *state.DB      // the port registry, for a proxied store's forwarder
	log zerolog.Logger // component chrome
}

func (b *chromeBackend) launch(ctx context.Context, sp Spec) (handle, error) {
	bin, err := chrome.Find(b.cfg.Chrome)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (set VIBE_CHROME to the browser binary)", errdefs.ErrUnavailable, err)
	}
	keeperCmd := b.cfg.Keeper
	if len(keeperCmd) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("the keeper is this executable, which cannot be found: %w", err)
		}
		keeperCmd = []string{exe, "keep"}
	}
	users, err := b.cfg.Users(sp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errdefs.ErrUnavailable, err)
	}
	if users.Bounded() && b.cfg.ChromeTransport == chrome.TransportPort {
		return nil, fmt.Errorf("%w: %s is an OS boundary (agent user %s), and a browser on a debugging port is "+
			"reachable by every local user: it needs VIBE_CHROME_TRANSPORT=pipe (the default), not port",
			errdefs.ErrUnavailable, sp.Name, users.Agent.Name)
	}
	runDir := b.cfg.path("run")
	if users.Browser != nil {
		if runDir, err = b.cfg.layOutBrowser(sp, users.Browser); err != nil {
			return nil, fmt.Errorf("%w: %s runs as browser user %s: %v", errdefs.ErrUnavailable, sp.Name, users.Browser.Name, err)
		}
	}
	id, err := b.identity(ctx, sp)
	if err != nil {
		return nil, err
	}
	profile := b.cfg.path("profiles", sp.Slug)
	portable, err := logins.PrepareProfile(profile, users.Browser)
	if err != nil {
		b.log.Warn().Err(err).Str("browser", sp.Key).Msg("launching portable")
		portable = true
	}
	return chrome.Launch(ctx, chrome.Options{
		Identity:   id,
		Binary:     bin,
		ProfileDir: profile,
		Portable:   portable,
		Headless:   b.cfg.headless(sp.Opts.Headless),
		// As root Chromium's sandbox cannot start; as its browser user it keeps it (user namespaces).
		NoSandbox: os.Geteuid() == 0 && users.Browser == nil,
		User:      users.Browser,
		Transport: b.cfg.ChromeTransport,
		Keeper:    keeperCmd,
		// In a cluster a browser must not outlive its manager past the store's lease (SPEC §19).
		KeeperOrphanStop: b.cfg.KeeperOrphanStop,
		RunDir:           runDir,
		Key:              sp.Key,
		Log:              b.log.With().Str("browser", sp.Key).Logger(),
	})
}

// identity is the store's network identity for its launch (SPEC §16), with its forwarder's port from the
// registry when it has a proxy: the port stays the store's, so a browser adopted after a restart and its
// keeper's forwarder keep it.
func (b *chromeBackend) identity(ctx context.Context, sp Spec) (chrome.Identity, error) {
	id := chrome.Identity{Timezone: sp.Opts.Timezone, Lang: sp.Opts.Lang}
	if sp.Opts.Proxy == "" {
		return id, nil
	}
	if b.cfg.ChromeTransport == chrome.TransportPort {
		return id, fmt.Errorf("%w: %s has a proxy, whose forwarder runs in the browser's keeper: it needs "+
			"VIBE_CHROME_TRANSPORT=pipe (the default), not port; or remove the proxy with "+
			"vibe-browser store set STORE --proxy none", errdefs.ErrUnavailable, sp.Name)
	}
	key := state.ForwardKey(sp.Key)
	port, err := b.db.Ports().Allocate(ctx, key, b.cfg.ProxyPortBase, portFree)
	if err == nil && !portFree(port) {
		// At a launch the store's last keeper is gone, so another program took the port meanwhile; only
		// this launch will know the forwarder's port, so a fresh one does as well.
		b.log.Warn().Int("port", port).Str("browser", sp.Key).Msg("the forwarder's registered port is taken; allocating another")
		if err = b.db.Ports().Release(ctx, key); err == nil {
			port, err = b.db.Ports().Allocate(ctx, key, b.cfg.ProxyPortBase, portFree)
		}
	}
	if err != nil {
		return id, err
	}
	id.Proxy, id.ForwardPort, id.Store = sp.Opts.Proxy, port, sp.Name
	if sp.Store != nil {
		id.Store = sp.Store.Name
	}
	return id, nil
}

// adopt checks the recorded identity: the pid alive with its start time, its command line naming our
// profile dir, and CDP answering; on the pipe through its keeper, whose identity file and hello must name
// that browser, found in the folder of the recorded socket (run/, or its browser user's in run/keepers/,
// whatever the store's setting says now). A browser an older manager started on a port is adopted on its
// port.
func (b *chromeBackend) adopt(ctx context.Context, sp Spec, rec state.BrowserSession) (handle, error) {
	if rec.PID <= 0 || rec.PIDStartTime.IsZero() {
		return nil, fmt.Errorf("%w: no process identity recorded", errNotAdoptable)
	}
	log := b.log.With().Str("browser", sp.Key).Logger()
	if strings.HasPrefix(rec.CDPEndpoint, "unix:") {
		dir, err := b.cfg.keeperDirOf(rec.CDPEndpoint, sp.Key)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errNotAdoptable, err)
		}
		return chrome.AdoptKept(ctx, dir, sp.Key, rec.PID, rec.PIDStartTime.UnixMilli(),
			b.cfg.path("profiles", sp.Slug), log)
	}
	return chrome.Adopt(ctx, rec.PID, rec.PIDStartTime.UnixMilli(), b.cfg.path("profiles", sp.Slug), log)
}

// crashed: a Chromium this manager launched that ended on a signal or a failure status. An adopted
// browser's exit status is unknown, so it never counts as a crash.
func (b *chromeBackend) crashed(h handle) bool {
	p, ok := h.(*chrome.Process)
	return ok && p.ExitErr() != nil
}

func (b *chromeBackend) relaunchable() bool { return true }
