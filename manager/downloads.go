package manager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/manager/handoffs"
	"vibebrowser/mux"
	"vibebrowser/mux/clientid"
	"vibebrowser/mux/downloads"
	"vibebrowser/state"
)

// Downloads (SPEC §12): each mux files its browser's downloads under downloads/<slug>/<owner dir>/; the
// manager records each finished one, tells the shim its client's folder, sweeps what a crash left half-done
// at boot and prunes old folders (VIBE_DOWNLOAD_KEEP_DAYS).

// downloadPruneEvery is how often old downloads folders are looked for: they age in days.
const downloadPruneEvery = time.Hour

// downloadDesk files the browsers' downloads: their records, their tasks' quota, their folders and their
// pruning.
type downloadDesk struct {
	cfg       *config.Config
	db        *state.DB
	log       zerolog.Logger
	note      func(level zerolog.Level, kind, key string, ev api.Event)
	step      func(key, task string, e api.Entry) // a step of a task's timeline
	quotaHit  func()                              // a download cancelled at VIBE_DOWNLOAD_MAX_MB
	findStore func(ctx context.Context, ref string) (state.Store, error)
	quota     downloadQuota
}

// dir is the folder client id's downloads land in on sp's browser (the shim's VIBE_DOWNLOAD_DIR),
// created so that an agent can look in it before its first download.
func (m *downloadDesk) dir(sp browsers.Spec, id string) string {
	dir := m.cfg.Path("downloads", sp.Slug, clientid.OwnerDir(id))
	err := os.MkdirAll(dir, 0o700)
	if bc := m.cfg.Browsers(); err == nil {
		// A bounded store's: its agent user's own, and no one else's (SPEC §14).
		if agent, aerr := bc.Agent(sp); aerr == nil && agent != nil {
			err = agent.Chown(dir)
		}
	}
	if err != nil {
		// The mux creates it again when a download completes, and reports its own failure then.
		m.log.Warn().Err(err).Str("dir", dir).Msg("create a client's downloads folder")
	}
	return dir
}

// downloadQuota counts what each owner folder's finished downloads take, for VIBE_DOWNLOAD_MAX_MB. The muxes
// ask it under their locks (downloadRoom), so it answers from memory: read from state once at boot, then
// kept with each download filed and each folder pruned.
type downloadQuota struct {
	mu   sync.Mutex // mu guards used
	used map[state.DownloadOwner]int64
}

func (q *downloadQuota) load(ctx context.Context, db *state.DB) error {
	used, err := db.DownloadBytes(ctx)
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.used = used
	q.mu.Unlock()
	return nil
}

// add counts n more bytes of o's.
func (q *downloadQuota) add(o state.DownloadOwner, n int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.used == nil {
		q.used = map[state.DownloadOwner]int64{}
	}
	q.used[o] += n
}

// forget drops o's count: its folder was pruned, with its records.
func (q *downloadQuota) forget(o state.DownloadOwner) {
	q.mu.Lock()
	defer q.mu.Unlock()
	delete(q.used, o)
}

func (q *downloadQuota) of(o state.DownloadOwner) int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used[o]
}

// room is the muxes' DownloadRoom: what a task's folder, or its store's aux folder (which every task
// of the store may use), may still take under VIBE_DOWNLOAD_MAX_MB. The other folders (manual, human,
// unattributed, discovery clients) are no agent task's: no bound.
func (m *downloadDesk) room(sp browsers.Spec, dir string) int64 {
	if dir != api.AuxClient && !api.ValidTaskID(dir) {
		return -1
	}
	return max(0, int64(m.cfg.DownloadMaxMB)<<20-m.quota.of(state.DownloadOwner{Key: sp.Key, OwnerDir: dir}))
}

// cut is the muxes' DownloadCut: a download cancelled at its task's quota is counted and said, in
// the events and in the task's timeline (its client heard "canceled"). A client of another host's task is
// that host's: its timeline's step and its event go there (clusterhost CutStep, then cutStep there), and this
// host's event names no task it does not have.
func (m *downloadDesk) cut(sp browsers.Spec, d downloads.Download) {
	m.quotaHit()
	if d.Host != "" {
		m.note(zerolog.WarnLevel, api.EventDownloadCancelled, sp.Key, api.Event{Message: m.cutMessage(d)})
		return
	}
	task := ""
	if api.ValidTaskID(d.OwnerDir) {
		task = d.OwnerDir
	}
	m.cutStep(sp, task, d.ClientID, m.cutMessage(d))
}

// cutMessage says why d was cancelled.
func (m *downloadDesk) cutMessage(d downloads.Download) string {
	return fmt.Sprintf("download %q from %q cancelled at %d MiB: the downloads of %s would pass their quota "+
		"(VIBE_DOWNLOAD_MAX_MB=%d)", d.Name, d.URL, d.Size>>20, d.OwnerDir, m.cfg.DownloadMaxMB)
}

// cutStep says that a download of client's was cancelled at task's quota, in the events and in the task's
// timeline: on the store's host for its own clients, on the task's host for those of another (Keep.Cut).
func (m *downloadDesk) cutStep(sp browsers.Spec, task, client, msg string) {
	m.note(zerolog.WarnLevel, api.EventDownloadCancelled, sp.Key, api.Event{TaskID: task, Message: msg})
	m.step(sp.Key, task, api.Entry{Client: client, Fault: &api.FaultEntry{What: api.FaultQuota, Message: msg}})
}

// record is a mux's Downloaded hook: the finished download goes into state.
func (m *downloadDesk) record(sp browsers.Spec, d downloads.Download) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	task := ""
	if api.ValidTaskID(d.OwnerDir) { // aux, manual, human, unattributed and discovery clients are no tasks
		task = d.OwnerDir
	}
	rec, err := m.db.RecordDownload(ctx, state.Download{Key: sp.Key, TaskID: task, ClientID: d.ClientID,
		OwnerDir: d.OwnerDir, GUID: d.GUID, URL: d.URL, Name: d.Name, Path: d.Path, Size: d.Size, SHA256: d.SHA256, At: d.At})
	if err != nil {
		m.log.Error().Err(err).Str("browser", sp.Key).Str("file", d.Path).Msg("record a finished download")
		return
	}
	m.quota.add(state.DownloadOwner{Key: sp.Key, OwnerDir: d.OwnerDir}, d.Size)
	// A task of another host's client is that host's: its record of the delivered file is its timeline's step.
	if task != "" && d.Host == "" {
		view := downloadView(rec, sp.Slug)
		m.step(sp.Key, task, api.Entry{Client: d.ClientID, Download: &view})
	}
}

// BrowserKey is the browser key ref names: a store's name, slug or id, or the web browser ("web").
func (m *downloadDesk) BrowserKey(ctx context.Context, ref string) (string, error) {
	if ref == api.WebSlug || ref == api.WebKey {
		return api.WebKey, nil
	}
	s, err := m.findStore(ctx, ref)
	return s.ID, err
}

// List is the finished downloads f selects, as the API prints them.
func (m *downloadDesk) List(ctx context.Context, f state.DownloadFilter) ([]api.Download, error) {
	ds, err := m.db.ListDownloads(ctx, f)
	if err != nil {
		return nil, err
	}
	slugs, err := m.slugsByKey(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]api.Download, 0, len(ds))
	for _, d := range ds {
		out = append(out, downloadView(d, slugs[d.Key]))
	}
	return out, nil
}

// slugsByKey maps every browser key (store ids and the web browser's) to its slug, the name of its
// downloads folder.
func (m *downloadDesk) slugsByKey(ctx context.Context) (map[string]string, error) {
	stores, err := m.db.ListStores(ctx)
	if err != nil {
		return nil, err
	}
	out := handoffs.SlugsOf(stores)
	out[api.WebKey] = api.WebKey // the web browser's folder is named for its key
	return out, nil
}

func downloadView(d state.Download, slug string) api.Download {
	store := d.Key
	if store == api.WebKey {
		store = ""
	}
	return api.Download{ID: d.ID, Store: store, Slug: slug, Task: d.TaskID, Client: d.ClientID, OwnerDir: d.OwnerDir,
		GUID: d.GUID, URL: d.URL, Name: d.Name, Path: d.Path, Size: d.Size, SHA256: d.SHA256, At: d.At}
}

// loop prunes old downloads folders now and then every downloadPruneEvery. It is a loop of its
// own rather than a step of the idle sweep, which VIBE_BROWSER_IDLE_S=0 turns off.
func (m *downloadDesk) loop(ctx context.Context) {
	if m.cfg.DownloadKeepDays == 0 {
		return
	}
	tick := time.NewTicker(downloadPruneEvery)
	defer tick.Stop()
	for {
		m.prune(ctx, time.Now())
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// prune removes every owner folder (a task's, aux, manual, human, unattributed, a discovery
// client's) in which nothing changed for VIBE_DOWNLOAD_KEEP_DAYS, with its records; a task that is still
// active keeps its folder however old.
func (m *downloadDesk) prune(ctx context.Context, now time.Time) {
	if m.cfg.DownloadKeepDays == 0 {
		return
	}
	cutoff := now.Add(-time.Duration(m.cfg.DownloadKeepDays) * 24 * time.Hour)
	err := func() error {
		tasks, err := m.db.ListActiveTasks(ctx, now)
		if err != nil {
			return err
		}
		active := map[string]bool{}
		for _, t := range tasks {
			if t.Active(now) {
				active[t.ID] = true
			}
		}
		slugs, err := m.slugsByKey(ctx)
		if err != nil {
			return err
		}
		keys := map[string]string{}
		for k, s := range slugs {
			keys[s] = k
		}
		root := m.cfg.Path("downloads")
		dirs, err := os.ReadDir(root)
		if err != nil {
			return err
		}
		for _, slug := range dirs {
			if !slug.IsDir() {
				continue
			}
			owners, err := os.ReadDir(filepath.Join(root, slug.Name()))
			if err != nil {
				return err
			}
			for _, o := range owners {
				if !o.IsDir() || o.Name() == downloads.IncomingDir || o.Name() == mux.UploadsDir || active[o.Name()] {
					continue
				}
				dir := filepath.Join(root, slug.Name(), o.Name())
				if newest(dir).After(cutoff) {
					continue
				}
				if err := os.RemoveAll(dir); err != nil {
					return err
				}
				var n int64
				if key, ok := keys[slug.Name()]; ok {
					if n, err = m.db.DeleteDownloads(ctx, key, o.Name()); err != nil {
						return err
					}
					m.quota.forget(state.DownloadOwner{Key: key, OwnerDir: o.Name()})
				}
				m.log.Info().Str("dir", dir).Int64("records", n).Int("keep_days", m.cfg.DownloadKeepDays).
					Msg("downloads folder pruned")
			}
		}
		return nil
	}()
	if err != nil && !errors.Is(err, context.Canceled) {
		m.log.Error().Err(err).Msg("prune downloads")
	}
}

// newest is the latest modification time of dir and everything in it.
func newest(dir string) time.Time {
	var t time.Time
	_ = filepath.WalkDir(dir, func(_ string, e fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().After(t) {
			t = fi.ModTime()
		}
		return nil
	})
	return t
}
