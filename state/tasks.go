package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"vibebrowser/mux/errdefs"
)

// TaskStatus is a task's status as the app reports it (SPEC §4.5).
type TaskStatus string

// Task statuses.
const (
	TaskPending   TaskStatus = "pending"
	TaskQueued    TaskStatus = "queued"
	TaskDesigning TaskStatus = "designing"
	TaskPlanned   TaskStatus = "planned"
	TaskRunning   TaskStatus = "running"
	TaskWaiting   TaskStatus = "waiting"
	TaskCompleted TaskStatus = "completed"
	TaskFailed    TaskStatus = "failed"
)

// TaskStatuses lists every status in lifecycle order.
var TaskStatuses = []TaskStatus{
	TaskPending, TaskQueued, TaskDesigning, TaskPlanned, TaskRunning, TaskWaiting, TaskCompleted, TaskFailed,
}

// ParseTaskStatus checks a status from the API or CLI.
func ParseTaskStatus(s string) (TaskStatus, error) {
	for _, st := range TaskStatuses {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("task status %q: want one of pending queued designing planned running waiting completed failed: %w", s, errdefs.ErrInvalid)
}

// HoldsBrowser reports whether a task in this status holds its store's browser (keeps it from the idle stop).
func (s TaskStatus) HoldsBrowser() bool {
	switch s {
	case TaskPending, TaskQueued, TaskDesigning, TaskPlanned, TaskRunning:
		return true
	}
	return false
}

// Active reports whether a task in this status keeps its browser-use daemons (SPEC §4.7's "active"): the
// statuses that hold the browser, and waiting.
func (s TaskStatus) Active() bool { return s.HoldsBrowser() || s == TaskWaiting }

// Ended reports whether a task in this status is over (completed or failed).
func (s TaskStatus) Ended() bool { return s == TaskCompleted || s == TaskFailed }

// Task is an agent task as the manager knows it.
type Task struct {
	ID      string
	StoreID string // empty for a web task (or one the app reported without a store)
	Status  TaskStatus
	// LeaseUntil is when the task counts as abandoned unless renewed; zero means no lease.
	LeaseUntil time.Time
	CreatedAt  time.Time // set by the database
	UpdatedAt  time.Time // set by the database
}

// LeaseValid reports whether the task's lease (if any) has not run out at now.
func (t Task) LeaseValid(now time.Time) bool {
	return t.LeaseUntil.IsZero() || now.Before(t.LeaseUntil)
}

// HoldsBrowser reports whether the task holds its store's browser at now.
func (t Task) HoldsBrowser(now time.Time) bool { return t.Status.HoldsBrowser() && t.LeaseValid(now) }

// Active reports whether the task's browser-use daemons must be kept at now: an active status and a valid lease.
func (t Task) Active(now time.Time) bool { return t.Status.Active() && t.LeaseValid(now) }

const taskColumns = `id, coalesce(store_id, ''), status, lease_until, created_at, updated_at`

func scanTask(row rowScanner) (Task, error) {
	var t Task
	var lease, created, updated sql.NullInt64
	err := row.Scan(&t.ID, &t.StoreID, &t.Status, &lease, &created, &updated)
	t.LeaseUntil, t.CreatedAt, t.UpdatedAt = fromNanos(lease), fromNanos(created), fromNanos(updated)
	return t, err
}

// validID accepts store and task ids: 1-64 characters of [A-Za-z0-9-]. That is VIBE_TASK_ID's
// alphabet without the shim's hex-prefix rule (the app may name tasks before any shim call), and
// it keeps store ids out of the reserved '_' namespace (ReservedKeyPrefix).
func validID(id string) bool {
	ok := id != "" && len(id) <= 64
	for _, r := range id {
		ok = ok && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-')
	}
	return ok
}

func checkTaskID(id string) error {
	if !validID(id) {
		return fmt.Errorf("task id %q: want 1-64 characters of A-Z, a-z, 0-9 and '-': %w", id, errdefs.ErrInvalid)
	}
	return nil
}

// nullString stores "" as NULL.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// UpsertTask records t (the app's report): inserts it, or replaces its status and lease and, when
// t.StoreID is set, its store; a report without a store keeps the one the task has (a status update never
// erases a field it was not given). A non-empty StoreID must name an existing store (errdefs.ErrNotFound otherwise).
func (db *DB) UpsertTask(ctx context.Context, t Task) (Task, error) {
	if err := checkTaskID(t.ID); err != nil {
		return Task{}, fmt.Errorf("record task: %w", err)
	}
	if _, err := ParseTaskStatus(string(t.Status)); err != nil {
		return Task{}, fmt.Errorf("record task %s: %w", t.ID, err)
	}
	err := db.write(ctx, func(tx *sql.Tx) error {
		if err := checkTaskStore(ctx, tx, t.StoreID); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		_, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, store_id, status, lease_until, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET store_id = COALESCE(excluded.store_id, tasks.store_id), status = excluded.status,
				lease_until = excluded.lease_until, updated_at = excluded.updated_at`,
			t.ID, nullString(t.StoreID), t.Status, nanos(t.LeaseUntil), now, now)
		if err != nil {
			return err
		}
		if t.Status.Ended() { // its tokens die with it (LookupTaskToken refuses them anyway)
			if _, err := tx.ExecContext(ctx, "DELETE FROM task_tokens WHERE task_id = ?", t.ID); err != nil {
				return err
			}
		}
		t, err = getTask(ctx, tx, t.ID)
		return err
	})
	if err != nil {
		return Task{}, fmt.Errorf("record task %s: %w", t.ID, err)
	}
	return t, nil
}

// TouchTask is a shim call's view of a task: it registers an unknown task as running on storeID
// with a lease until leaseUntil, or renews the lease of a known one, leaving its status and store
// as they are (SPEC §4.5). It is one statement, so concurrent calls for one task never race.
func (db *DB) TouchTask(ctx context.Context, id, storeID string, leaseUntil time.Time) (Task, error) {
	if err := checkTaskID(id); err != nil {
		return Task{}, fmt.Errorf("touch task: %w", err)
	}
	if leaseUntil.IsZero() {
		return Task{}, fmt.Errorf("touch task %s: zero lease: %w", id, errdefs.ErrInvalid)
	}
	var t Task
	err := db.write(ctx, func(tx *sql.Tx) error {
		if err := checkTaskStore(ctx, tx, storeID); err != nil {
			return err
		}
		now := time.Now().UnixNano()
		_, err := tx.ExecContext(ctx, `INSERT INTO tasks (id, store_id, status, lease_until, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET lease_until = excluded.lease_until, updated_at = excluded.updated_at`,
			id, nullString(storeID), TaskRunning, leaseUntil.UnixNano(), now, now)
		if err != nil {
			return err
		}
		t, err = getTask(ctx, tx, id)
		return err
	})
	if err != nil {
		return Task{}, fmt.Errorf("touch task %s: %w", id, err)
	}
	return t, nil
}

// RenewLease moves a known task's lease to until.
func (db *DB) RenewLease(ctx context.Context, id string, until time.Time) error {
	res, err := db.exec(ctx, "UPDATE tasks SET lease_until = ?, updated_at = ? WHERE id = ?",
		nanos(until), time.Now().UnixNano(), id)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = errdefs.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("renew lease of task %s: %w", id, err)
	}
	return nil
}

// DeleteTask forgets a task.
func (db *DB) DeleteTask(ctx context.Context, id string) error {
	res, err := db.exec(ctx, "DELETE FROM tasks WHERE id = ?", id)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = errdefs.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("delete task %s: %w", id, err)
	}
	return nil
}

// GetTask returns the task with the given id.
func (db *DB) GetTask(ctx context.Context, id string) (Task, error) {
	t, err := getTask(ctx, db.sql, id)
	if err != nil {
		return Task{}, fmt.Errorf("task %s: %w", id, err)
	}
	return t, nil
}

// ListTasks returns every task, oldest first.
func (db *DB) ListTasks(ctx context.Context) ([]Task, error) {
	return db.listTasks(ctx, "SELECT "+taskColumns+" FROM tasks ORDER BY created_at, id")
}

// ListActiveTasks returns the tasks that keep their daemons at now (Task.Active): a status among
// the holding ones or waiting, and a lease that has not run out.
func (db *DB) ListActiveTasks(ctx context.Context, now time.Time) ([]Task, error) {
	return db.listTasks(ctx, `SELECT `+taskColumns+` FROM tasks
		WHERE status IN ('pending', 'queued', 'designing', 'planned', 'running', 'waiting')
			AND (lease_until IS NULL OR lease_until > ?)
		ORDER BY created_at, id`, now.UnixNano())
}

func (db *DB) listTasks(ctx context.Context, query string, args ...any) ([]Task, error) {
	return allRows(ctx, db.sql, "list tasks", scanTask, query, args...)
}

func getTask(ctx context.Context, q queryer, id string) (Task, error) {
	t, err := scanTask(q.QueryRowContext(ctx, "SELECT "+taskColumns+" FROM tasks WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, errdefs.ErrNotFound
	}
	return t, err
}

func checkTaskStore(ctx context.Context, q queryer, storeID string) error {
	if storeID == "" {
		return nil
	}
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM stores WHERE id = ?", storeID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("store %s: %w", storeID, errdefs.ErrNotFound)
	}
	return err
}
