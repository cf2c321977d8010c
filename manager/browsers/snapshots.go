package browsers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
	"vibebrowser/manager/snapshot"
	"vibebrowser/mux/errdefs"
	"vibebrowser/mux/sys/atomicfile"
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

// Restore replaces sp's profile and its checkpoint with snapshot id's ("" = the newest), so the next launch is
// the snapshot's state. Its browser must be stopped: a restore under a running Chromium would be overwritten
// by it.
func (sn *Snapshots) Restore(ctx context.Context, sp Spec, id string) (snapshot.Restored, error) {
	if err := refuseForeignProfile(sp); err != nil {
		return snapshot.Restored{}, err
	}
	s := sn.f.slot(sp.Key)
	if err := s.acquire(ctx); err != nil {
		return snapshot.Restored{}, err
	}
	defer s.release()
	if s.current() != nil {
		return snapshot.Restored{}, fmt.Errorf("%w: %s's browser is running, and a restore replaces the profile it "+
			"runs on: stop it first with %s, then restore", errdefs.ErrConflict, sp.Name, stopCommand(sp))
	}
	if dead := s.cur.Load(); dead != nil { // died; its watcher has not cleaned up yet
		sn.f.buryLocked(s, dead)
	}
	select {
	case s.snapSem <- struct{}{}:
	case <-ctx.Done():
		return snapshot.Restored{}, ctx.Err()
	}
	defer func() { <-s.snapSem }()
	profile := sn.profileDir(sp)
	r, aside, err := sn.replaceProfile(sp, id, profile)
	if err != nil {
		return snapshot.Restored{}, err
	}
	if aside != "" {
		if err := os.RemoveAll(aside); err != nil {
			sn.f.log.Warn().Err(err).Str("folder", aside).Msg("restore: the replaced profile was not removed")
		}
	}
	// The checkpoint goes with the snapshot, or goes: a newer one would set newer cookies into the older profile.
	if err := sn.writeJar(sp.Slug, r.Jar, ownerOf(profile)); err != nil {
		return r, fmt.Errorf("restore %s: the profile is snapshot %s's, but its checkpoint: %w", sp.Name, r.ID, err)
	}
	sn.noteRebuild(sp, snapshot.Rebuild{Why: snapshot.WhyRestored, Snapshot: r.ID})
	sn.f.note(zerolog.InfoLevel, api.EventProfileRestored, sp.Key, api.Event{Message: fmt.Sprintf(
		"%s's profile and checkpoint were replaced by snapshot %s (taken %s, %s): its next launch is that state",
		sp.Name, r.ID, r.At.Format(time.RFC3339), checkpointWords(r.Jar))})
	return r, nil
}

// stopCommand is the command that stops sp's browser.
func stopCommand(sp Spec) string {
	if sp.Key == api.WebKey {
		return "vibe-browser web stop"
	}
	return "vibe-browser browser stop " + sp.Slug
}

func checkpointWords(jar []byte) string {
	if jar == nil {
		return "which holds no cookie checkpoint: the profile's own cookies are the ones"
	}
	return "with the cookie checkpoint it holds"
}

// replaceProfile builds a profile from snapshot id of sp in a fresh folder beside profile, then puts it in
// profile's place; the folder it replaced, if any, is returned (aside) for the caller to keep or remove. The
// new folder is given to whoever owned the old one (a root manager's otherwise; the launch gives a profile to
// its browser user).
func (sn *Snapshots) replaceProfile(sp Spec, id, profile string) (snapshot.Restored, string, error) {
	stage := filepath.Join(filepath.Dir(profile), "."+sp.Slug+".restore-"+rand.Text()[:8])
	if err := os.MkdirAll(filepath.Dir(profile), 0o700); err != nil {
		return snapshot.Restored{}, "", err
	}
	sn.finishInterruptedRestore(sp, profile)
	r, err := sn.store.Restore(sp.Slug, id, stage)
	if err != nil {
		return r, "", err
	}
	own := ownerOf(profile)
	if own != nil {
		if err := giveTree(stage, *own); err != nil {
			os.RemoveAll(stage)
			return r, "", fmt.Errorf("restore %s: the profile's owner: %w", sp.Name, err)
		}
	}
	var aside string
	if _, err := os.Lstat(profile); err == nil {
		aside = filepath.Join(filepath.Dir(profile), "."+sp.Slug+".replaced-"+rand.Text()[:8])
		if err := os.Rename(profile, aside); err != nil {
			os.RemoveAll(stage)
			return r, "", fmt.Errorf("restore %s: move the profile aside: %w", sp.Name, err)
		}
	}
	if err := os.Rename(stage, profile); err != nil {
		os.RemoveAll(stage)
		if aside != "" {
			os.Rename(aside, profile)
		}
		return r, "", fmt.Errorf("restore %s: %w", sp.Name, err)
	}
	atomicfile.SyncDir(filepath.Dir(profile))
	return r, aside, nil
}

// finishInterruptedRestore clears what a restore a crash cut short left beside profile (the store's lock is
// held: nobody else's): a profile moved aside whose replacement never took its place is put back, so the
// launch is on the state the person had rather than a rebuild; a staged folder and a replaced one left over
// go.
func (sn *Snapshots) finishInterruptedRestore(sp Spec, profile string) {
	dir := filepath.Dir(profile)
	aside, _ := filepath.Glob(filepath.Join(dir, "."+sp.Slug+".replaced-*"))
	if _, err := os.Lstat(profile); errors.Is(err, fs.ErrNotExist) && len(aside) == 1 {
		if err := os.Rename(aside[0], profile); err == nil {
			sn.f.log.Warn().Str("browser", sp.Key).Str("profile", profile).
				Msg("a restore was cut short before its profile took the old one's place: the old profile is back")
			aside = nil
			atomicfile.SyncDir(dir)
		}
	}
	stale, _ := filepath.Glob(filepath.Join(dir, "."+sp.Slug+".restore-*"))
	for _, d := range append(stale, aside...) {
		os.RemoveAll(d)
	}
}

// readyProfileLocked is what a start of sp does to its profile first: wait for its last stop's snapshot, then
// rebuild it from the newest snapshot when its folder was lost (missing, or holding nothing of Chromium's).
// A rebuild that fails is an event; the launch goes on, on what there is. The caller holds s's lock.
func (sn *Snapshots) readyProfileLocked(ctx context.Context, s *slot, sp Spec) error {
	if !ownsProfile(sp) {
		return nil
	}
	if err := sn.awaitLocked(ctx, s); err != nil {
		return err
	}
	profile := sn.profileDir(sp)
	sn.finishInterruptedRestore(sp, profile)
	if !profileLost(profile) {
		return nil
	}
	newest, err := snapshot.Find(sn.store.Dir, sp.Slug, "")
	if err != nil {
		if !errors.Is(err, errdefs.ErrNotFound) {
			sn.f.log.Warn().Err(err).Str("browser", sp.Key).Msg("lost profile: the snapshots cannot be listed")
		}
		return nil // a new store, or one never stopped cleanly: Chromium makes a fresh profile
	}
	r, aside, err := sn.replaceProfile(sp, newest.ID, profile)
	if err != nil {
		sn.f.note(zerolog.ErrorLevel, api.EventSnapshotFailed, sp.Key, api.Event{Message: fmt.Sprintf(
			"%s's profile folder %s was lost and could not be rebuilt from snapshot %s: %v; it starts with a fresh profile",
			sp.Name, profile, newest.ID, err)})
		return nil
	}
	if aside != "" {
		os.RemoveAll(aside) // an empty folder
	}
	sn.noteRebuild(sp, snapshot.Rebuild{Why: snapshot.WhyLost, Snapshot: r.ID})
	sn.f.note(zerolog.WarnLevel, api.EventProfileRebuilt, sp.Key, api.Event{Message: fmt.Sprintf(
		"%s's profile folder %s was missing or empty: rebuilt from snapshot %s (taken %s, %d files); the newest "+
			"checkpoint's cookies are set back at launch", sp.Name, profile, r.ID, r.At.Format(time.RFC3339), r.Files)})
	return nil
}

// profileLost: profile is missing, or a folder with nothing in it but the browser user's HOME.
func profileLost(profile string) bool {
	ents, err := os.ReadDir(profile)
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() != ".home" {
			return false
		}
	}
	return true
}

// exited reports whether h's browser has ended.
func exited(h handle) bool {
	select {
	case <-h.Done():
		return true
	default:
		return false
	}
}

// profileFault reports whether a launch failed the way a profile Chromium refuses makes it fail.
func profileFault(err error) bool {
	return errors.Is(err, chrome.ErrExited) || errors.Is(err, chrome.ErrProfileUnready)
}

// launchInSnapshotLocked is the one retry of a launch of sp that failed with its profile's fault (failed): in a
// profile rebuilt from the newest snapshot, the refused one kept as profiles/<slug>.broken-<time>/. When the
// retry fails too the profile was not the cause: it is put back as it was, and failed stands. The caller
// holds s's lock.
func (sn *Snapshots) launchInSnapshotLocked(ctx context.Context, sp Spec, be backend, failed error) (handle, error) {
	newest, err := snapshot.Find(sn.store.Dir, sp.Slug, "")
	if err != nil {
		return nil, failed
	}
	log := sn.f.log.With().Str("browser", sp.Key).Str("snapshot", newest.ID).Logger()
	log.Warn().Err(failed).Msg("the launch failed on the profile: retrying once in a profile rebuilt from the newest snapshot")
	profile := sn.profileDir(sp)
	r, aside, err := sn.replaceProfile(sp, newest.ID, profile)
	if err != nil {
		log.Error().Err(err).Msg("the profile could not be rebuilt from the snapshot")
		return nil, failed
	}
	broken := profile + ".broken-" + time.Now().UTC().Format("20060102T150405Z")
	if aside != "" {
		if err := os.Rename(aside, broken); err != nil {
			broken = aside
		}
	}
	h, err := be.launch(ctx, sp)
	if err != nil {
		log.Warn().Err(err).Msg("the rebuilt profile failed too: the profile was not the cause; putting it back")
		if aside != "" {
			if err := errors.Join(os.RemoveAll(profile), os.Rename(broken, profile)); err != nil {
				log.Error().Err(err).Str("kept_as", broken).Msg("the profile could not be put back")
			}
		}
		return nil, failed
	}
	sn.noteRebuild(sp, snapshot.Rebuild{Why: snapshot.WhyBroken, Snapshot: r.ID, KeptAs: broken})
	sn.f.note(zerolog.WarnLevel, api.EventProfileBroken, sp.Key, api.Event{Message: fmt.Sprintf(
		"%s's browser would not start on its profile (%v); the profile was kept as %s and the browser started in one "+
			"rebuilt from snapshot %s (taken %s); the newest checkpoint's cookies are set back at launch",
		sp.Name, failed, broken, r.ID, r.At.Format(time.RFC3339))})
	return h, nil
}

func (sn *Snapshots) noteRebuild(sp Spec, r snapshot.Rebuild) {
	r.At = time.Now()
	if err := sn.store.NoteRebuild(sp.Slug, r); err != nil {
		sn.f.log.Warn().Err(err).Str("browser", sp.Key).Msg("record the profile's rebuild")
	}
}

// fileOwner is who a file is given to.
type fileOwner struct{ uid, gid int }

// ownerOf is path's owner, when the manager is root (it may give files away) and path is there.
func ownerOf(path string) *fileOwner {
	if os.Geteuid() != 0 {
		return nil
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	return &fileOwner{int(st.Uid), int(st.Gid)}
}

// giveTree gives dir and everything in it to o, from inside it: it is a folder the manager just made.
func giveTree(dir string, o fileOwner) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	return fs.WalkDir(root.FS(), ".", func(name string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return root.Lchown(name, o.uid, o.gid)
	})
}
