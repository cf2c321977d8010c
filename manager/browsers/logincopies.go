package browsers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
	"vibebrowser/manager/snapshot"
	"vibebrowser/mux/errdefs"
)

// A store's login is the cluster's (SPEC §19): every checkpoint and snapshot (§18) this host writes is also
// handed to the cluster's copies, in the background, and a launch of a store whose login this host lacks, or
// holds older, takes the cluster's first. In single-host mode there are no copies: none of this runs.

// LoginCopies keep every store's login on the cluster: its newest checkpoint and its newest snapshots, as
// the sealed bytes this host writes on disk (the cluster's *Logins is one). Every method returns when ctx
// ends; a store with none answers with an error of class errdefs.ErrNotFound.
type LoginCopies interface {
	// PutJar keeps sealed, store storeID's checkpoint written at at, unless the copies hold a newer one.
	PutJar(ctx context.Context, storeID string, sealed []byte, at time.Time) error
	// PutSnapshot keeps snapshot id of store storeID, taken at at, read from r.
	PutSnapshot(ctx context.Context, storeID, id string, r io.Reader, at time.Time) error
	// Jar is store storeID's newest checkpoint, sealed, and when it was written.
	Jar(ctx context.Context, storeID string) (sealed []byte, at time.Time, err error)
	// NewestSnapshot is store storeID's newest snapshot: its id, when it was taken and its sealed bytes (read
	// within ctx; the caller closes rc).
	NewestSnapshot(ctx context.Context, storeID string) (id string, at time.Time, rc io.ReadCloser, err error)
}

// Bounds of the copies' calls. A launch waits for the cluster's answer fetchBound at most, then goes on with
// what this host holds; a snapshot's bytes, once the cluster answered, get snapshotFetchBound.
const (
	copyJarBound      = 30 * time.Second // one PutJar
	copySnapshotBound = 10 * time.Minute // one PutSnapshot: a profile's snapshot is tens of MB
	fetchBound        = 3 * time.Second  // the cluster's answer before a launch
	// fetchBoundNone is the cluster's answer before the launch of a store this host holds no login of (a
	// store failed over or moved here, or started here first): the cluster's copy is its only login, and a
	// cluster that just lost a node may take a few seconds to elect its streams' new leaders.
	fetchBoundNone     = 15 * time.Second
	fetchTry           = time.Second      // one question to the cluster within those bounds; unanswered, it is asked again
	snapshotFetchBound = time.Minute      // a snapshot's bytes, before a launch of a lost profile
	copiesQuitBound    = 3 * time.Second  // the quit barrier's wait for copies still on their way
	copyRetryMax       = 30 * time.Second // the longest pause between two tries of a copy that failed
)

// copied reports whether sp's login goes to the cluster: a store's does; the web browser is each host's own.
func copied(sp Spec) bool { return sp.Key != api.WebKey }

// sealKeyOf is what seals the home's checkpoints and snapshots: on a single host VIBE_SNAPSHOT_KEY or the
// home's key file (made on first use); in a cluster the cluster's secret, so that every host opens every
// host's, which also opens what the home's own key sealed before the host joined (no key file is made for
// that).
func sealKeyOf(cfg Config, log zerolog.Logger) (*seal.Key, error) {
	if cfg.ClusterKey == nil {
		return seal.LoadKey(cfg.Home, cfg.SnapshotKey)
	}
	if cfg.SnapshotKey == "" {
		if _, err := os.Lstat(filepath.Join(cfg.Home, seal.KeyFile)); errors.Is(err, fs.ErrNotExist) {
			return cfg.ClusterKey, nil
		}
	}
	home, err := seal.LoadKey(cfg.Home, cfg.SnapshotKey)
	if err != nil {
		log.Warn().Err(err).Msg("the home's own snapshot key does not load: what it sealed before this host joined the cluster will not open")
		return cfg.ClusterKey, nil
	}
	return cfg.ClusterKey.OpeningAlso(home), nil
}

// loginCopier hands the checkpoints and snapshots this host writes to the copies. Each store has one
// pending slot: the checkpoint changed (its newest file is read when it is copied) and the newest snapshot
// not copied yet. While a slot is not empty one goroutine of the store's copies it, so a slow or cut-off
// cluster holds at most one jar and one snapshot of a store, and never delays a checkpoint or a stop.
type loginCopier struct {
	copies  LoginCopies
	home    string
	snapDir string
	log     zerolog.Logger
	// ctx is the copies' life: it ends with close, at the quit barrier's end, not with the daemon's context,
	// so that the last stops' checkpoints and snapshots still go.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu sync.Mutex
	// mu guards the fields below.
	stores map[string]*storeCopies // by store id
	closed bool
}

// storeCopies is one store's pending slot. Its fields are guarded by loginCopier.mu.
type storeCopies struct {
	slug    string
	jar     bool   // the checkpoint was written since it was last copied
	snap    string // the newest snapshot taken and not copied yet, "" none
	running bool   // a goroutine copies what is pending
	idle    chan struct{}
	failed  string // the last failure logged, until a copy succeeds
}

func newLoginCopier(copies LoginCopies, home, snapDir string, log zerolog.Logger) *loginCopier {
	ctx, cancel := context.WithCancel(context.Background())
	return &loginCopier{copies: copies, home: home, snapDir: snapDir, ctx: ctx, cancel: cancel,
		log: log.With().Str("copies", "cluster").Logger(), stores: map[string]*storeCopies{}}
}

// jarWritten hands sp's checkpoint, just written, to the copies. A nil copier (single host) does nothing.
func (c *loginCopier) jarWritten(sp Spec) {
	c.pend(sp, func(st *storeCopies) { st.jar = true })
}

// snapshotTaken hands sp's snapshot id, just taken, to the copies.
func (c *loginCopier) snapshotTaken(sp Spec, id string) {
	c.pend(sp, func(st *storeCopies) { st.snap = id })
}

func (c *loginCopier) pend(sp Spec, set func(*storeCopies)) {
	if c == nil || !copied(sp) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	st := c.stores[sp.Key]
	if st == nil {
		st = &storeCopies{}
		c.stores[sp.Key] = st
	}
	st.slug = sp.Slug
	set(st)
	if !st.running {
		st.running, st.idle = true, make(chan struct{})
		c.wg.Go(func() { c.run(sp.Key, st) })
	}
}

// run copies st's pending checkpoint and snapshot until none is pending. A copy that failed for a reason
// that may pass (the cluster unreachable) is pending again, unless a newer one came, and is tried again
// after a pause that grows; one the copies refuse (a class of errdefs) is dropped.
func (c *loginCopier) run(key string, st *storeCopies) {
	var pause time.Duration
	for {
		c.mu.Lock()
		jar, snap, slug := st.jar, st.snap, st.slug
		st.jar, st.snap = false, ""
		if !jar && snap == "" || c.ctx.Err() != nil {
			st.running = false
			close(st.idle)
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		var errs []error
		if jar {
			if err := c.copyJar(key, slug); err != nil {
				errs = append(errs, err)
				c.again(st, err, func() { st.jar = true })
			}
		}
		if snap != "" {
			if err := c.copySnapshot(key, slug, snap); err != nil {
				errs = append(errs, err)
				c.again(st, err, func() {
					if st.snap == "" {
						st.snap = snap
					}
				})
			}
		}
		err := errors.Join(errs...)
		c.logged(key, st, err)
		if err == nil {
			pause = 0
			continue
		}
		pause = min(max(2*pause, time.Second), copyRetryMax)
		select {
		case <-c.ctx.Done():
		case <-time.After(pause):
		}
	}
}

// again makes a failed copy pending again (redo, under mu), unless the copies refused it for good.
func (c *loginCopier) again(st *storeCopies, err error, redo func()) {
	if errdefs.Class(err) != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	redo()
}

// logged logs a store's failed copies once until their error changes, and their recovery once.
func (c *loginCopier) logged(key string, st *storeCopies, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case err == nil && st.failed != "":
		c.log.Info().Str("browser", key).Msg("the store's login is copied to the cluster again")
		st.failed = ""
	case err != nil && err.Error() != st.failed:
		c.log.Warn().Err(err).Str("browser", key).Msg("the store's login was not copied to the cluster; tried again later")
		st.failed = err.Error()
	}
}

// copyJar copies slug's checkpoint as it is on disk now: the newest, whatever was written since it was
// handed over.
func (c *loginCopier) copyJar(key, slug string) error {
	sealed, at, err := logins.ReadSealedJar(c.home, slug)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.ctx, copyJarBound)
	defer cancel()
	if err := c.copies.PutJar(ctx, key, sealed, at); err != nil {
		return fmt.Errorf("its checkpoint: %w", err)
	}
	return nil
}

// copySnapshot copies snapshot id of slug, unless it was pruned meanwhile.
func (c *loginCopier) copySnapshot(key, slug, id string) error {
	info, err := snapshot.Find(c.snapDir, slug, id)
	if errors.Is(err, errdefs.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	f, err := os.Open(info.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	ctx, cancel := context.WithTimeout(c.ctx, copySnapshotBound)
	defer cancel()
	if err := c.copies.PutSnapshot(ctx, key, info.ID, f, info.At); err != nil {
		return fmt.Errorf("snapshot %s: %w", info.ID, err)
	}
	return nil
}

// await waits until nothing of key's is pending or being copied.
func (c *loginCopier) await(ctx context.Context, key string) error {
	c.mu.Lock()
	st := c.stores[key]
	if st == nil || !st.running {
		c.mu.Unlock()
		return nil
	}
	idle := st.idle
	c.mu.Unlock()
	select {
	case <-idle:
	case <-ctx.Done():
		c.mu.Lock()
		defer c.mu.Unlock()
		if st.failed != "" {
			return fmt.Errorf("the login is not copied to the cluster yet (%w): %s", ctx.Err(), st.failed)
		}
		return fmt.Errorf("the login is not copied to the cluster yet: %w", ctx.Err())
	}
	if c.ctx.Err() != nil {
		return fmt.Errorf("the login was not copied to the cluster: %w", errdefs.ErrShuttingDown)
	}
	return nil
}

// close takes no more copies, waits bound at most for those on their way, then stops them and waits.
func (c *loginCopier) close(bound time.Duration) {
	if c == nil {
		return
	}
	c.once.Do(func() {
		c.mu.Lock()
		c.closed = true
		var idle []chan struct{}
		for _, st := range c.stores {
			if st.running {
				idle = append(idle, st.idle)
			}
		}
		c.mu.Unlock()
		deadline := time.NewTimer(bound)
		defer deadline.Stop()
	wait:
		for i, ch := range idle {
			select {
			case <-ch:
			case <-deadline.C:
				c.log.Warn().Int("stores", len(idle)-i).Msg("quit: logins still on their way to the cluster were not all copied; it may hold older ones of these stores")
				break wait
			}
		}
		c.cancel()
		c.wg.Wait()
	})
}

// AwaitLoginCopies waits until key's newest checkpoint and snapshot are copied to the cluster, the
// snapshot of its last stop first (SPEC §19: a move hands a store over once its login is on the cluster).
// Without copies (a single host) it returns at once.
func (f *Fleet) AwaitLoginCopies(ctx context.Context, key string) error {
	if f.copies == nil {
		return nil
	}
	s := f.slot(key)
	select {
	case s.snapSem <- struct{}{}:
		<-s.snapSem
	case <-ctx.Done():
		return fmt.Errorf("waiting for the last stop's snapshot: %w", ctx.Err())
	}
	return f.copies.await(ctx, key)
}

// fetchLoginLocked takes the cluster's copy of sp's login where this host's is missing or older, before the
// launch readies the profile (§18's code then runs as on a single host): the newest checkpoint when it is
// newer than this host's, and, when the profile folder is lost and this host has no snapshot of it, the
// newest snapshot. The cluster's answers get fetchBound in all: one that does not answer leaves the launch to
// what is here; nothing here fails it. The caller holds s's lock.
func (sn *Snapshots) fetchLoginLocked(ctx context.Context, sp Spec, profile string) {
	c := sn.f.copies
	if c == nil || !copied(sp) {
		return
	}
	log := sn.f.log.With().Str("browser", sp.Key).Logger()
	answers := time.Now().Add(fetchBound)
	if _, err := os.Lstat(logins.JarPath(sn.f.cfg.Home, sp.Slug)); errors.Is(err, fs.ErrNotExist) {
		answers = time.Now().Add(fetchBoundNone)
	}
	if !sn.fetchJar(ctx, c, sp, profile, answers, log) {
		return // the cluster did not answer: it would not answer for the snapshot either
	}
	if profileLost(profile) {
		sn.fetchSnapshot(ctx, c, sp, profile, answers, log)
	}
}

// fetchJar writes the cluster's checkpoint of sp as this host's when it is newer (or this host has none),
// with the time it was written on the host that wrote it, so the two compare alike at the next launch. It
// reports whether the cluster answered by answers.
func (sn *Snapshots) fetchJar(ctx context.Context, c *loginCopier, sp Spec, profile string, answers time.Time, log zerolog.Logger) bool {
	var sealed []byte
	var at time.Time
	var err error
	for {
		// A question sent while the cluster elects a stream's leader goes unanswered: ask again, in short tries.
		try := time.Now().Add(fetchTry)
		if answers.Before(try) {
			try = answers
		}
		fctx, cancel := context.WithDeadline(ctx, try)
		sealed, at, err = c.copies.Jar(fctx, sp.Key)
		timedOut := fctx.Err() != nil
		cancel()
		if err == nil || !timedOut || !time.Now().Before(answers) || ctx.Err() != nil {
			break
		}
	}
	if errors.Is(err, errdefs.ErrNotFound) {
		return true
	}
	if err != nil {
		log.Warn().Err(err).Msg("the cluster's login checkpoint was not fetched: the launch goes on with this host's")
		return time.Now().Before(answers)
	}
	sn.takeJar(sp, profile, sealed, at, log)
	return true
}

// takeJar writes sealed, the cluster's checkpoint of sp written at at, as this host's unless this host's is
// as new.
func (sn *Snapshots) takeJar(sp Spec, profile string, sealed []byte, at time.Time, log zerolog.Logger) {
	path := logins.JarPath(sn.f.cfg.Home, sp.Slug)
	if fi, err := os.Lstat(path); err == nil && !at.After(fi.ModTime()) {
		return
	}
	key, err := sn.key()
	if err != nil {
		log.Warn().Err(err).Msg("the cluster's login checkpoint was not taken")
		return
	}
	content, err := logins.OpenJar(key, sp.Slug, sealed)
	if err != nil {
		log.Warn().Err(err).Msg("the cluster's login checkpoint does not open here: the launch goes on with this host's")
		return
	}
	own := ownerOf(path)
	if own == nil {
		own = ownerOf(profile)
	}
	if err := sn.writeJar(sp.Slug, content, own); err != nil {
		log.Warn().Err(err).Msg("the cluster's login checkpoint was not written here")
		return
	}
	if err := os.Chtimes(path, at, at); err != nil {
		log.Warn().Err(err).Msg("the cluster's login checkpoint keeps the time it was written here")
	}
	log.Info().Time("written", at).Msg("login checkpoint taken from the cluster: newer than this host's")
}

// fetchSnapshot adds the cluster's newest snapshot of sp to this host's when it has none.
func (sn *Snapshots) fetchSnapshot(ctx context.Context, c *loginCopier, sp Spec, profile string, answers time.Time, log zerolog.Logger) {
	if _, err := snapshot.Find(sn.store.Dir, sp.Slug, ""); !errors.Is(err, errdefs.ErrNotFound) {
		return // this host's newest, or a folder that does not list: the §18 code says which
	}
	tctx, cancel := context.WithTimeout(ctx, snapshotFetchBound)
	defer cancel()
	answer := time.AfterFunc(time.Until(answers), cancel)
	id, at, rc, err := c.copies.NewestSnapshot(tctx, sp.Key)
	if !answer.Stop() && err == nil {
		rc.Close()
		err = fmt.Errorf("no answer within %s", fetchBound)
	}
	if errors.Is(err, errdefs.ErrNotFound) {
		return
	}
	if err != nil {
		log.Warn().Err(err).Msg("lost profile: the cluster's snapshot was not fetched; the launch goes on with what is here")
		return
	}
	defer rc.Close()
	info, err := sn.store.Import(sp.Slug, id, rc)
	if err != nil {
		sn.f.note(zerolog.ErrorLevel, api.EventSnapshotFailed, sp.Key, api.Event{Message: fmt.Sprintf(
			"%s's profile folder %s was lost and the cluster's snapshot %s (taken %s) could not be used: %v",
			sp.Name, profile, id, at.Format(time.RFC3339), err)})
		return
	}
	log.Info().Str("snapshot", info.ID).Int64("bytes", info.Size).Msg("lost profile: the cluster's newest snapshot fetched")
}
