package browsers

import (
	"vibebrowser/manager/ziniao"
	"vibebrowser/state"
)

// StoreFacts is what a store's backend options mean under a configuration, for readers outside the daemon
// (vibe-browser doctor) that must decide as the daemon would.
type StoreFacts struct {
	Headless bool           // chrome: its Chromium runs headless (its own setting, then VIBE_HEADLESS, then the display)
	Ziniao   *ziniao.Client // ziniao: the client of the Ziniao app its environment runs in; nil otherwise
}

// StoreFacts decides store s's facts the way starting its browser would.
func (c *Config) StoreFacts(s state.Store) (StoreFacts, error) {
	sp, err := StoreSpec(s)
	if err != nil {
		return StoreFacts{}, err
	}
	f := StoreFacts{Headless: c.headless(sp.Opts.Headless)}
	if s.Backend == state.BackendZiniao {
		z, err := ziniaoStoreOf(sp)
		if err != nil {
			return StoreFacts{}, err
		}
		f.Ziniao = z.client()
	}
	return f, nil
}

// HeadlessByDefault reports whether a Chromium store without its own setting (and the web browser) runs
// headless: VIBE_HEADLESS, else headless when there is no display.
func (c *Config) HeadlessByDefault() bool { return c.headless(nil) }
