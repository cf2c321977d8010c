package tasks

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/manager/reaper"
	"vibebrowser/state"
)

// leaseRenewEvery is the share of the task lease after which a shim call writes the lease again: calls in
// between find it fresh and write nothing, which keeps a write transaction off ensure's fast path. A lease
// is therefore at least 99% of VIBE_TASK_LEASE_S when its task's last call returns.
const leaseRenewEvery = 100

// leaseMemoPrune is the size at which Touch's memory of written leases is pruned.
const leaseMemoPrune = 1024

// Config is what the task desk needs of the daemon around it.
type Config struct {
	Cfg   *config.Config
	DB    *state.DB
	Log   zerolog.Logger
	Fleet *browsers.Fleet
	// Reaper is the reaper's view of the runtime dir, and whether the reaper may act in it (not
	// VIBE_DISABLE_DAEMON_SWEEP, and the dir is this manager's): asked at each use, since the runtime dir is
	// claimed after the desk is made.
	Reaper func(ctx context.Context) (reaper.Config, bool)
	// FindStore resolves a store named by name, slug or id.
	FindStore func(ctx context.Context, ref string) (state.Store, error)
	// DownloadDir is the folder a client's (or task's) downloads land in on a browser, created.
	DownloadDir func(sp browsers.Spec, id string) string
}

// Desk keeps the tasks: their leases (renewed by the shims' calls, expired by its loop) and their tokens.
type Desk struct {
	cfg Config
	log zerolog.Logger

	leaseMu sync.Mutex           // leaseMu guards leased
	leased  map[string]leaseMark // task id -> the lease Touch last wrote
}

// New is the task desk on cfg.
func New(cfg Config) *Desk { return &Desk{cfg: cfg, log: cfg.Log, leased: map[string]leaseMark{}} }

// leaseMark is the last lease Touch wrote for a task.
type leaseMark struct {
	store string
	at    time.Time
}

// Touch registers or renews a shim-called task (state.TouchTask), unless this manager wrote the same
// task's lease for the same store recently enough.
func (d *Desk) Touch(ctx context.Context, id, storeID string) error {
	now := time.Now()
	d.leaseMu.Lock()
	last, ok := d.leased[id]
	d.leaseMu.Unlock()
	if ok && last.store == storeID && now.Sub(last.at) < d.cfg.Cfg.TaskLease/leaseRenewEvery {
		return nil
	}
	if _, err := d.cfg.DB.TouchTask(ctx, id, storeID, now.Add(d.cfg.Cfg.TaskLease)); err != nil {
		return err
	}
	d.leaseMu.Lock()
	defer d.leaseMu.Unlock()
	if len(d.leased) >= leaseMemoPrune { // marks past the window decide nothing: drop them
		for k, v := range d.leased {
			if now.Sub(v.at) >= d.cfg.Cfg.TaskLease/leaseRenewEvery {
				delete(d.leased, k)
			}
		}
	}
	d.leased[id] = leaseMark{store: storeID, at: now}
	return nil
}

// forget drops what Touch remembers of a task, so that its next shim call writes (and, after a
// deletion, registers it again).
func (d *Desk) forget(id string) {
	d.leaseMu.Lock()
	delete(d.leased, id)
	d.leaseMu.Unlock()
}

// Ended stops the browser-use daemons of a task that completed, failed, was deleted or lost its lease,
// and forgets its last lease write (see Touch).
func (d *Desk) Ended(ctx context.Context, id string) {
	d.forget(id)
	rc, on := d.cfg.Reaper(ctx)
	if !on || len(id) < 8 {
		return
	}
	res, err := reaper.StopTask(ctx, rc, id[:8])
	if err != nil {
		d.log.Error().Err(err).Str("task", id).Msg("stop the daemons of an ended task")
	}
	if len(res.Killed) > 0 {
		d.log.Info().Str("task", id).Strs("killed", res.Killed).Msg("stopped the daemons of an ended task")
	}
}

// leaseCheckEvery is how often expired task leases are looked for.
const leaseCheckEvery = 15 * time.Second

// Loop stops the daemons of a task as soon as its lease expires (a task the app forgot, or whose shim
// calls stopped): the periodic reaper pass would find them too, but only at its interval.
func (d *Desk) Loop(ctx context.Context) {
	if _, on := d.cfg.Reaper(ctx); !on {
		return
	}
	tick := time.NewTicker(min(leaseCheckEvery, max(d.cfg.Cfg.TaskLease/2, time.Second)))
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			tasks, err := d.cfg.DB.ListTasks(ctx)
			if err != nil {
				d.log.Error().Err(err).Msg("lease check: list tasks")
				continue
			}
			for _, t := range tasks {
				if t.Status.Active() && t.LeaseUntil.After(last) && !t.LeaseUntil.After(now) {
					d.log.Info().Str("task", t.ID).Msg("task lease expired")
					d.Ended(ctx, t.ID)
				}
			}
			last = now
		}
	}
}
