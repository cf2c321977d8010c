package timeline

import (
	"context"
	"time"
)

// pruneEvery is how often the retention prune runs: entries age in days.
const pruneEvery = time.Hour

// Loop prunes entries older than the retention (Config.Keep) now and every pruneEvery, until ctx ends.
func (r *Recorder) Loop(ctx context.Context) {
	if r.cfg.Keep <= 0 {
		return
	}
	tick := time.NewTicker(pruneEvery)
	defer tick.Stop()
	for {
		r.Prune(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Prune removes the entries older than the retention, and their shots' files.
func (r *Recorder) Prune(ctx context.Context) {
	if r.cfg.Keep <= 0 {
		return
	}
	cutoff := r.cfg.Now().Add(-r.cfg.Keep)
	files, err := r.cfg.DB.Timeline().Prune(ctx, cutoff)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Log.Error().Err(err).Msg("prune the timeline")
		}
		return
	}
	if len(files) > 0 {
		r.cfg.Log.Info().Int("shots", len(files)).Time("before", cutoff).Msg("timeline pruned")
	}
	r.mu.Lock()
	clear(r.used) // each task's size is read again at its next step
	clear(r.told)
	r.mu.Unlock()
	r.remove(files)
}
