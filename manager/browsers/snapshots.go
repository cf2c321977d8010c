package browsers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
	"vibebrowser/manager/snapshot"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// Snapshots of a store's profile (SPEC §18): taken at every clean stop and, for a browser that keeps running,
// every VIBE_SNAPSHOT_EVERY; a profile found lost at a launch, or one Chromium will not start on, is rebuilt
// from the newest; a person restores one with the browser stopped.
//
// A snapshot never holds a store's lock while it reads and seals: a stop's runs after the lock is released,
// and each slot's snapSem makes the next start of that store (and a restore) wait for it before they touch
// the profile. A running browser's is taken by the loop, without the lock, so no client waits for it.

// Snapshots are the stores' profile snapshots (SPEC §18) and the checkpoints they carry. Its methods that read
// or replace a profile take the store's slot (its lock, its snapSem) from the fleet.
type Snapshots struct {
	f     *Fleet
	store *snapshot.Store
	key   func() (*seal.Key, error) // the seal of checkpoints and snapshots, read on first use (Fleet.sealKey)
	wg    sync.WaitGroup            // every snapshot of a stop being taken; the quit barrier waits for them
}

func newSnapshots(f *Fleet, key func() (*seal.Key, error)) *Snapshots {
	store := &snapshot.Store{Dir: f.cfg.SnapshotDir, Keep: f.cfg.SnapshotKeep, Key: key}
	if store.Dir == "" {
		store.Dir = f.cfg.path("snapshots")
	}
	if store.Keep <= 0 {
		store.Keep = 5
	}
	return &Snapshots{f: f, store: store, key: key}
}

// Snapshots are the fleet's profile snapshots.
func (f *Fleet) Snapshots() *Snapshots { return f.snaps }

// ownsProfile: only a Chromium the manager launches has a profile of the manager's to snapshot; Ziniao's and
// a cdp store's are someone else's.
func ownsProfile(sp Spec) bool { return sp.Backend == state.BackendChrome }

// profileDir is sp's profile folder.
func (sn *Snapshots) profileDir(sp Spec) string { return sn.f.cfg.path("profiles", sp.Slug) }

// afterStopLocked snapshots sp's profile, its browser having stopped cleanly: in the background, the
// slot's snapSem held until it is done. The caller holds s's lock.
func (sn *Snapshots) afterStopLocked(s *slot, sp Spec) {
	if !ownsProfile(sp) {
		return
	}
	s.snapSem <- struct{}{} // a live snapshot still reading: bounded by its own work
	sn.wg.Go(func() {
		defer func() { <-s.snapSem }()
		_, _ = sn.takeHeld(sp, snapshot.Full)
	})
}

// takeHeld snapshots sp's profile with its newest checkpoint. Its failure is logged and an event, never
// fatal: the caller goes on.
func (sn *Snapshots) takeHeld(sp Spec, kind snapshot.Kind) (snapshot.Info, error) {
	began := time.Now()
	log := sn.f.log.With().Str("browser", sp.Key).Str("slug", sp.Slug).Str("kind", string(kind)).Logger()
	jar, err := sn.readJar(sp.Slug)
	if err != nil {
		log.Warn().Err(err).Msg("snapshot: the checkpoint does not open; the snapshot is taken without it")
	}
	info, err := sn.store.Take(sp.Slug, sn.profileDir(sp), jar, kind)
	if errors.Is(err, snapshot.ErrEmpty) {
		return info, err // a profile its browser never wrote: nothing lost
	}
	if err != nil && info.ID == "" {
		sn.f.note(zerolog.ErrorLevel, api.EventSnapshotFailed, sp.Key, api.Event{Message: fmt.Sprintf(
			"%s: no snapshot of its profile was taken: %v", sp.Name, err)})
		return info, err
	}
	if err != nil {
		log.Warn().Err(err).Msg("snapshot taken; older ones not pruned")
	}
	log.Info().Str("snapshot", info.ID).Int64("bytes", info.Size).Bool("jar", jar != nil).
		Int64("took_ms", time.Since(began).Milliseconds()).Msg("snapshot taken")
	sn.f.copies.snapshotTaken(sp, info.ID)
	return info, nil
}

// awaitLocked waits for the snapshot of sp's last stop, if one is still being taken, before a start
// touches the profile. The caller holds s's lock.
func (sn *Snapshots) awaitLocked(ctx context.Context, s *slot) error {
	select {
	case s.snapSem <- struct{}{}:
		<-s.snapSem
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for the last stop's snapshot: %w", ctx.Err())
	}
}

// Loop takes a live snapshot of every running browser whose newest snapshot (or whose start) is older
// than VIBE_SNAPSHOT_EVERY, one at a time, holding no store's lock; 0 disables it. It returns with ctx.
func (sn *Snapshots) Loop(ctx context.Context) {
	if sn.f.cfg.SnapshotEvery <= 0 {
		return
	}
	tick := time.NewTicker(max(min(time.Minute, sn.f.cfg.SnapshotEvery/4), 100*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, s := range sn.f.slots() {
			if ctx.Err() != nil {
				return
			}
			sn.ifDue(s)
		}
	}
}

// ifDue takes s's live snapshot when it is due and no other snapshot of s is being taken.
func (sn *Snapshots) ifDue(s *slot) {
	in := s.current()
	if in == nil || !ownsProfile(in.spec) {
		return
	}
	last := in.startedAt
	if newest, err := snapshot.Find(sn.store.Dir, in.spec.Slug, ""); err == nil && newest.At.After(last) {
		last = newest.At
	}
	if time.Since(last) < sn.f.cfg.SnapshotEvery {
		return
	}
	select {
	case s.snapSem <- struct{}{}:
	default:
		return // a stop's snapshot is being taken
	}
	defer func() { <-s.snapSem }()
	if s.current() != in { // stopped meanwhile: its stop takes a full one
		return
	}
	_, _ = sn.takeHeld(in.spec, snapshot.Live)
}

// Take takes a snapshot of sp's profile now: a full one while its browser is stopped, a live one while it
// runs (its settings files and newest checkpoint; its databases as the snapshot before holds them).
func (sn *Snapshots) Take(ctx context.Context, sp Spec) (snapshot.Info, error) {
	if err := refuseForeignProfile(sp); err != nil {
		return snapshot.Info{}, err
	}
	s := sn.f.slot(sp.Key)
	if err := s.acquire(ctx); err != nil {
		return snapshot.Info{}, err
	}
	kind := snapshot.Full
	if s.current() != nil {
		kind = snapshot.Live
	}
	select {
	case s.snapSem <- struct{}{}: // a start waits for it before it touches the profile
	case <-ctx.Done():
		s.release()
		return snapshot.Info{}, ctx.Err()
	}
	s.release()
	defer func() { <-s.snapSem }()
	return sn.takeHeld(sp, kind)
}

// List lists sp's snapshots, newest first.
func (sn *Snapshots) List(sp Spec) ([]snapshot.Info, error) {
	if err := refuseForeignProfile(sp); err != nil {
		return nil, err
	}
	return snapshot.List(sn.store.Dir, sp.Slug)
}

// LoginTimes are when slug's newest checkpoint was written (its jar's time) and its newest snapshot taken;
// zero when there is none.
func (sn *Snapshots) LoginTimes(slug string) (checkpoint, snap time.Time) {
	if fi, err := os.Lstat(logins.JarPath(sn.f.cfg.Home, slug)); err == nil {
		checkpoint = fi.ModTime()
	}
	if in, err := snapshot.Find(sn.store.Dir, slug, ""); err == nil {
		snap = in.At
	}
	return checkpoint, snap
}

func refuseForeignProfile(sp Spec) error {
	if ownsProfile(sp) {
		return nil
	}
	return fmt.Errorf("%w: %s runs on a %s browser, whose profile is not the manager's: snapshots are of chrome "+
		"stores and the web browser (its cookies are still checkpointed and set back at each launch)",
		errdefs.ErrInvalid, sp.Name, sp.Backend)
}
