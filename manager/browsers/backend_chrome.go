package browsers

import (
	"context"
	"fmt"
	"os"

	"github.com/rs/zerolog"

	"vibebrowser/manager/apierr"
	"vibebrowser/manager/chrome"
	"vibebrowser/state"
)

// chromeBackend launches Chromium itself, on the store's profile.
type chromeBackend struct {
	cfg *Config
	log zerolog.Logger // component chrome
}

func (b *chromeBackend) launch(ctx context.Context, sp Spec) (handle, error) {
	bin, err := chrome.Find(b.cfg.Chrome)
	if err != nil {
		return nil, fmt.Errorf("%w: %v (set VIBE_CHROME to the browser binary)", apierr.ErrUnavailable, err)
	}
	return chrome.Launch(ctx, chrome.Options{
		Binary:     bin,
		ProfileDir: b.cfg.path("profiles", sp.Slug),
		Headless:   b.cfg.headless(sp.Opts.Headless),
		NoSandbox:  os.Geteuid() == 0,
		Log:        b.log.With().Str("browser", sp.Key).Logger(),
	})
}

// adopt checks the recorded identity: the pid alive with its start time, its command line naming our
// profile dir, and CDP answering.
func (b *chromeBackend) adopt(ctx context.Context, sp Spec, rec state.BrowserSession) (handle, error) {
	if rec.PID <= 0 || rec.PIDStartTime.IsZero() {
		return nil, fmt.Errorf("%w: no process identity recorded", errNotAdoptable)
	}
	return chrome.Adopt(ctx, rec.PID, rec.PIDStartTime.UnixMilli(), b.cfg.path("profiles", sp.Slug),
		b.log.With().Str("browser", sp.Key).Logger())
}

// crashed: a Chromium this manager launched that ended on a signal or a failure status. An adopted
// browser's exit status is unknown, so it never counts as a crash.
func (b *chromeBackend) crashed(h handle) bool {
	p, ok := h.(*chrome.Process)
	return ok && p.ExitErr() != nil
}

func (b *chromeBackend) relaunchable() bool { return true }
