package browsers

import (
	"context"
	"fmt"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
)

// Fence kills key's browser at once, for a host that lost the store's lease (SPEC §19): another host may
// start the store soon, and two browsers must never run one profile. The mux stops serving first, so no
// client reaches the browser through this host; the browser's process group gets SIGKILL without waiting
// for the store's lock (a launch or a stop may hold it), no Browser.close and no snapshot; the state is put
// in order under the lock afterwards. A browser that launches meanwhile is refused by Hooks.MayRun.
func (f *Fleet) Fence(key, why string) {
	s := f.slot(key)
	in := s.cur.Load()
	if in == nil {
		return
	}
	in.cancel()
	killNow, cancel := context.WithCancel(context.Background())
	cancel() // an ended context takes Stop straight to SIGKILL of the group
	if err := in.browser.Stop(killNow); err != nil {
		f.log.Error().Err(err).Str("browser", key).Msg("fence: kill the browser")
	}
	f.note(zerolog.WarnLevel, api.EventBrowserFenced, key, api.Event{Message: fmt.Sprintf("%s was killed here: %s",
		in.spec.Name, why)})
	f.wg.Go(func() {
		ctx, cancel := context.WithTimeout(f.ctx, stopBound)
		defer cancel()
		if err := s.acquire(ctx); err != nil {
			return
		}
		defer s.release()
		if s.cur.Load() == in {
			f.teardownLocked(s, in)
		}
	})
}
