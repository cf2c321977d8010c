package cluster

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"
)

// watchBucket follows every entry of kv until ctx ends, handing each to note (the current ones first). A
// watch that has delivered nothing for quiet is started again: a watch's consumer can stall without an
// error while the bucket's stream changes leader (its node died), and a host's view of the others must not
// freeze then. A failed start is tried again after a second.
func watchBucket(ctx context.Context, kv jetstream.KeyValue, quiet time.Duration, note func(jetstream.KeyValueEntry), log zerolog.Logger) {
	for ctx.Err() == nil {
		w, err := kv.WatchAll(ctx)
		if err != nil {
			log.Debug().Err(err).Str("bucket", kv.Bucket()).Msg("watch")
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
			continue
		}
		follow(ctx, w, quiet, note)
		_ = w.Stop()
	}
}

// follow hands w's entries to note until ctx ends, w ends, or nothing came for quiet.
func follow(ctx context.Context, w jetstream.KeyWatcher, quiet time.Duration, note func(jetstream.KeyValueEntry)) {
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e != nil {
				note(e)
			}
			t.Reset(quiet)
		}
	}
}
