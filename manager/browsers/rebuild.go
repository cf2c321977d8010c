package browsers

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/snapshot"
	"vibebrowser/mux/errdefs"
)

// A launch's rebuild of a store's profile from its newest snapshot (SPEC §18): when the folder was lost, and
// when Chromium will not start on it.

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
	sn.fetchLoginLocked(ctx, sp, profile)
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
	h, err := sn.f.launch(ctx, be, sp)
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
