package browsers

import (
	"context"

	"vibebrowser/manager/remote"
	"vibebrowser/state"
)

// cdpBackend connects to an endpoint someone else runs: starting checks that it answers, stopping only
// disconnects, and the manager never relaunches it.
type cdpBackend struct{}

func (cdpBackend) launch(ctx context.Context, sp Spec) (handle, error) {
	return remote.Connect(ctx, sp.Opts.CDPURL)
}

func (cdpBackend) adopt(ctx context.Context, sp Spec, _ state.BrowserSession) (handle, error) {
	return remote.Connect(ctx, sp.Opts.CDPURL)
}

func (cdpBackend) crashed(handle) bool { return false }
func (cdpBackend) relaunchable() bool  { return false }
