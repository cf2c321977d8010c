package browsers

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/logins"
	"vibebrowser/manager/snapshot"
	"vibebrowser/mux/errdefs"
	"vibebrowser/mux/sys/atomicfile"
)

// A person's restore of a store's profile from one of its snapshots (SPEC §18).

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
	// In a cluster it is replaced by an empty one instead, newer than the cluster's, which a launch would
	// otherwise take (SPEC §19).
	jar := r.Jar
	if jar == nil && sn.f.copies != nil && copied(sp) {
		jar = logins.Encode(nil, time.Now())
	}
	if err := sn.writeJar(sp.Slug, jar, ownerOf(profile)); err != nil {
		return r, fmt.Errorf("restore %s: the profile is snapshot %s's, but its checkpoint: %w", sp.Name, r.ID, err)
	}
	sn.f.copies.jarWritten(sp)
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
