package manager

import (
	"context"
	"time"

	"vibebrowser/manager/reaper"
)

// leaseRenewEvery is the share of the task lease after which a shim call writes the lease again: calls in
// between find it fresh and write nothing, which keeps a write transaction off ensure's fast path. A lease
// is therefore at least 99% of VIBE_TASK_LEASE_S when its task's last call returns.
const leaseRenewEvery = 100

// leaseMemoPrune is the size at which touchTask's memory of written leases is pruned.
const leaseMemoPrune = 1024

// leaseMark is the last lease touchTask wrote for a task.
type leaseMark struct {
	store string
	at    time.Time
}

// touchTask registers or renews a shim-called task (state.TouchTask), unless this manager wrote the same
// task's lease for the same store recently enough.
func (m *Manager) touchTask(ctx context.Context, id, storeID string) error {
	now := time.Now()
	m.leaseMu.Lock()
	last, ok := m.leased[id]
	m.leaseMu.Unlock()
	if ok && last.store == storeID && now.Sub(last.at) < m.cfg.TaskLease/leaseRenewEvery {
		return nil
	}
	if _, err := m.db.TouchTask(ctx, id, storeID, now.Add(m.cfg.TaskLease)); err != nil {
		return err
	}
	m.leaseMu.Lock()
	defer m.leaseMu.Unlock()
	if len(m.leased) >= leaseMemoPrune { // marks past the window decide nothing: drop them
		for k, v := range m.leased {
			if now.Sub(v.at) >= m.cfg.TaskLease/leaseRenewEvery {
				delete(m.leased, k)
			}
		}
	}
	m.leased[id] = leaseMark{store: storeID, at: now}
	return nil
}

// forgetLease drops what touchTask remembers of a task, so that its next shim call writes (and, after a
// deletion, registers it again).
func (m *Manager) forgetLease(id string) {
	m.leaseMu.Lock()
	delete(m.leased, id)
	m.leaseMu.Unlock()
}

// taskEnded stops the browser-use daemons of a task that completed, failed, was deleted or lost its lease,
// and forgets its last lease write (see touchTask).
func (m *Manager) taskEnded(ctx context.Context, id string) {
	m.forgetLease(id)
	if m.cfg.DisableReaper || !m.ownsRuntime || len(id) < 8 {
		return
	}
	res, err := reaper.StopTask(ctx, m.reaperConfig(ctx), id[:8])
	if err != nil {
		m.log.Error().Err(err).Str("task", id).Msg("stop the daemons of an ended task")
	}
	if len(res.Killed) > 0 {
		m.log.Info().Str("task", id).Strs("killed", res.Killed).Msg("stopped the daemons of an ended task")
	}
}

// leaseCheckEvery is how often expired task leases are looked for.
const leaseCheckEvery = 15 * time.Second

// leaseLoop stops the daemons of a task as soon as its lease expires (a task the app forgot, or whose shim
// calls stopped): the periodic reaper pass would find them too, but only at its interval.
func (m *Manager) leaseLoop(ctx context.Context) {
	if m.cfg.DisableReaper || !m.ownsRuntime {
		return
	}
	tick := time.NewTicker(min(leaseCheckEvery, max(m.cfg.TaskLease/2, time.Second)))
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			tasks, err := m.db.ListTasks(ctx)
			if err != nil {
				m.log.Error().Err(err).Msg("lease check: list tasks")
				continue
			}
			for _, t := range tasks {
				if t.Status.Active() && t.LeaseUntil.After(last) && !t.LeaseUntil.After(now) {
					m.log.Info().Str("task", t.ID).Msg("task lease expired")
					m.taskEnded(ctx, t.ID)
				}
			}
			last = now
		}
	}
}
