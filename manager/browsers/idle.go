package browsers

import (
	"context"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
)

// StopIdle stops every running browser that no task holds (held names the keys that one does), no client
// is connected to, no person watches and nothing has touched for VIBE_BROWSER_IDLE_S. Each decision is
// taken under the store's lock, the lock ensure takes, so a task starting in between is never cut off.
func (f *Fleet) StopIdle(ctx context.Context, held map[string]bool) {
	for _, s := range f.slots() {
		if held[s.key] || s.current() == nil {
			continue
		}
		lockCtx, cancel := context.WithTimeout(ctx, time.Second)
		err := s.acquire(lockCtx) // a start or stop in progress: decide next round
		cancel()
		if err != nil {
			continue
		}
		if in := s.current(); in != nil && f.busyReason(in) == "" {
			f.note(zerolog.InfoLevel, api.EventIdleStop, s.key, api.Event{Message: fmt.Sprintf(
				"%s stopped: no task, no client and no activity for %s", in.spec.Name, f.cfg.Idle)})
			f.teardownLocked(s, in)
		}
		s.release()
	}
}

// busyReason says why in is not idle, or "" when it is.
func (f *Fleet) busyReason(in *Instance) string {
	st := in.mux.Stats()
	switch {
	case st.Clients > 0:
		return "connected clients"
	case st.Viewers > 0: // a person watching a tab, or logging a store in through a human tab
		return "a person is watching"
	case time.Duration(st.IdleSeconds*float64(time.Second)) < f.cfg.Idle:
		return "recent activity"
	case time.Since(time.Unix(0, in.lastEnsure.Load())) < f.cfg.Idle:
		return "recent ensure"
	}
	return ""
}
