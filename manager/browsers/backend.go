package browsers

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// handle is a started browser as its backend sees it: a Chromium the manager launched or adopted, a Ziniao
// environment, or a remote endpoint.
type handle interface {
	PID() int         // 0 when the manager runs no process for it
	StartTime() int64 // ms since the epoch; 0 when the manager runs no process
	Endpoint() string
	Adopted() bool // taken over rather than started by this manager: no orphan-tab sweep
	Done() <-chan struct{}
	Stop(ctx context.Context) error
	// Release stops watching the browser without stopping it, for the next manager to adopt.
	Release()
}

// backend starts and adopts one kind of browser and says what the manager may do when it dies. The generic
// lifecycle (locks, budget, mux, state) knows backends only through this interface.
type backend interface {
	// launch starts Spec's browser, bounded by ctx.
	launch(ctx context.Context, sp Spec) (handle, error)
	// adopt takes over the browser a previous manager recorded in rec, checking that it is the same one.
	adopt(ctx context.Context, sp Spec, rec state.BrowserSession) (handle, error)
	// crashed reports whether h's death is a crash that the manager repairs by relaunching the browser
	// behind its mux; any other death is buried.
	crashed(h handle) bool
	// relaunchable reports whether the manager may replace a browser of this backend that its mux finds
	// unreachable (the mux's relaunch hook).
	relaunchable() bool
}

// newBackends builds every backend. root is the daemon's root logger; each backend names its component.
func newBackends(cfg *Config, db *state.DB, root zerolog.Logger) map[state.Backend]backend {
	return map[state.Backend]backend{
		state.BackendChrome: &chromeBackend{cfg: cfg, db: db, log: root.With().Str("component", "chrome").Logger()},
		state.BackendZiniao: newZiniaoBackend(cfg, root),
		state.BackendCDP:    cdpBackend{},
	}
}

// backendFor returns sp's backend.
func (f *Fleet) backendFor(sp Spec) (backend, error) {
	be, ok := f.backends[sp.Backend]
	if !ok {
		return nil, fmt.Errorf("%w: the %s backend cannot be started by this manager", errdefs.ErrUnavailable, sp.Backend)
	}
	return be, nil
}
