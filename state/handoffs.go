package state

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/mattn/go-sqlite3"

	"vibebrowser/mux/errdefs"
)

// HandoffStatus is where an agent's request for a person's help stands. A handoff is pending until a
// person answers it (done, cant_help), the agent stops waiting (cancelled) or its deadline passes
// (timed_out); only a pending handoff ever changes.
type HandoffStatus string

// Handoff statuses.
const (
	HandoffPending   HandoffStatus = "pending"
	HandoffDone      HandoffStatus = "done"
	HandoffCantHelp  HandoffStatus = "cant_help"
	HandoffTimedOut  HandoffStatus = "timed_out"
	HandoffCancelled HandoffStatus = "cancelled"
)

// HandoffStatuses lists every status, pending first.
var HandoffStatuses = []HandoffStatus{HandoffPending, HandoffDone, HandoffCantHelp, HandoffTimedOut, HandoffCancelled}

// Handoff is an agent's request for a person's help, as the manager keeps it across restarts.
type Handoff struct {
	ID       string // made by CreateHandoff
	StoreID  string // empty for the web browser
	TaskID   string // VIBE_TASK_ID of the asking agent, empty for none
	ClientID string // the asking session's mux client id
	BUName   string // the asking session's browser-use name
	Reason   string
	Status   HandoffStatus
	Note     string    // the person's answer
	Deadline time.Time // when the agent stops waiting
	// CreatedAt and AnsweredAt (when it left pending) are set by the database.
	CreatedAt, AnsweredAt time.Time
}

const handoffColumns = `id, coalesce(store_id, ''), task_id, client_id, bu_name, reason, status, note, created_at,
	deadline, answered_at`

func scanHandoff(row rowScanner) (Handoff, error) {
	var h Handoff
	var created, deadline, answered sql.NullInt64
	err := row.Scan(&h.ID, &h.StoreID, &h.TaskID, &h.ClientID, &h.BUName, &h.Reason, &h.Status, &h.Note,
		&created, &deadline, &answered)
	h.CreatedAt, h.Deadline, h.AnsweredAt = fromNanos(created), fromNanos(deadline), fromNanos(answered)
	return h, err
}

// newHandoffID is 48 random bits in hex: short enough to type in `vibe-browser handoff done ID`, and
// handoffs are made by people's agents at a human pace, so a collision (retried) is all but impossible.
func newHandoffID() string {
	var b [6]byte
	rand.Read(b[:]) // never fails: crypto/rand.Read crashes the program instead
	return hex.EncodeToString(b[:])
}

// CreateHandoff records a new pending handoff and returns it with its id. A non-empty StoreID must name
// an existing store (errdefs.ErrNotFound); ClientID, BUName, Reason and Deadline are required (errdefs.ErrInvalid).
func (db *DB) CreateHandoff(ctx context.Context, h Handoff) (Handoff, error) {
	switch {
	case h.ClientID == "" || h.BUName == "" || h.Reason == "":
		return Handoff{}, fmt.Errorf("record handoff: client id, session name and reason are required: %w", errdefs.ErrInvalid)
	case h.Deadline.IsZero():
		return Handoff{}, fmt.Errorf("record handoff: zero deadline: %w", errdefs.ErrInvalid)
	case h.TaskID != "":
		if err := checkTaskID(h.TaskID); err != nil {
			return Handoff{}, fmt.Errorf("record handoff: %w", err)
		}
	}
	for attempt := 0; ; attempt++ {
		h.ID = newHandoffID()
		err := db.write(ctx, func(tx *sql.Tx) error {
			if err := checkTaskStore(ctx, tx, h.StoreID); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO handoffs (id, store_id, task_id, client_id, bu_name, reason,
				status, created_at, deadline) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				h.ID, nullString(h.StoreID), h.TaskID, h.ClientID, h.BUName, h.Reason, HandoffPending,
				time.Now().UnixNano(), h.Deadline.UnixNano())
			if err != nil {
				return err
			}
			h, err = getHandoff(ctx, tx, h.ID)
			return err
		})
		var serr sqlite3.Error
		if errors.As(err, &serr) && serr.ExtendedCode == sqlite3.ErrConstraintPrimaryKey && attempt < 3 {
			continue
		}
		if err != nil {
			return Handoff{}, fmt.Errorf("record handoff: %w", err)
		}
		return h, nil
	}
}

// GetHandoff returns the handoff with the given id.
func (db *DB) GetHandoff(ctx context.Context, id string) (Handoff, error) {
	h, err := getHandoff(ctx, db.sql, id)
	if err != nil {
		return Handoff{}, fmt.Errorf("handoff %s: %w", id, err)
	}
	return h, nil
}

func getHandoff(ctx context.Context, q queryer, id string) (Handoff, error) {
	h, err := scanHandoff(q.QueryRowContext(ctx, "SELECT "+handoffColumns+" FROM handoffs WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Handoff{}, errdefs.ErrNotFound
	}
	return h, err
}

// ListHandoffs returns the handoffs in status (every handoff when status is ""), oldest first: the one
// that has waited longest comes first.
func (db *DB) ListHandoffs(ctx context.Context, status HandoffStatus) ([]Handoff, error) {
	return allRows(ctx, db.sql, "list handoffs", scanHandoff, "SELECT "+handoffColumns+` FROM handoffs
		WHERE ? = '' OR status = ? ORDER BY created_at, id`, status, status)
}

// FinishHandoff moves a pending handoff to done, cant_help or cancelled with the person's note, at at.
// A handoff that is no longer pending is left as it is: the error wraps errdefs.ErrConflict and the handoff
// returned is its current state, so the caller can say what happened to it instead.
func (db *DB) FinishHandoff(ctx context.Context, id string, to HandoffStatus, note string, at time.Time) (Handoff, error) {
	if to != HandoffDone && to != HandoffCantHelp && to != HandoffCancelled {
		return Handoff{}, fmt.Errorf("finish handoff %s: status %q: want done, cant_help or cancelled (timeouts are ExpireHandoffs'): %w",
			id, to, errdefs.ErrInvalid)
	}
	var h Handoff
	var closed bool
	err := db.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE handoffs SET status = ?, note = ?, answered_at = ?
			WHERE id = ? AND status = 'pending'`, to, note, at.UnixNano(), id)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		closed = n == 0
		h, err = getHandoff(ctx, tx, id)
		return err
	})
	switch {
	case err != nil:
		return Handoff{}, fmt.Errorf("finish handoff %s: %w", id, err)
	case closed:
		return h, fmt.Errorf("handoff %s is already %s: %w", id, h.Status, errdefs.ErrConflict)
	}
	return h, nil
}

// ExpireHandoffs moves every pending handoff whose deadline is at or before now to timed_out, and
// returns them.
func (db *DB) ExpireHandoffs(ctx context.Context, now time.Time) ([]Handoff, error) {
	var out []Handoff
	err := db.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "SELECT "+handoffColumns+` FROM handoffs
			WHERE status = 'pending' AND deadline <= ? ORDER BY created_at, id`, now.UnixNano())
		if err != nil {
			return err
		}
		for rows.Next() {
			h, err := scanHandoff(rows)
			if err != nil {
				rows.Close()
				return err
			}
			out = append(out, h)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range out {
			if _, err := tx.ExecContext(ctx, `UPDATE handoffs SET status = 'timed_out', answered_at = ? WHERE id = ?`,
				now.UnixNano(), out[i].ID); err != nil {
				return err
			}
			out[i].Status, out[i].AnsweredAt = HandoffTimedOut, time.Unix(0, now.UnixNano())
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("expire handoffs: %w", err)
	}
	return out, nil
}

// NextHandoffDeadline is the earliest deadline of a pending handoff, or the zero time when none is pending.
func (db *DB) NextHandoffDeadline(ctx context.Context) (time.Time, error) {
	var next sql.NullInt64
	err := db.sql.QueryRowContext(ctx, "SELECT min(deadline) FROM handoffs WHERE status = 'pending'").Scan(&next)
	if err != nil {
		return time.Time{}, fmt.Errorf("next handoff deadline: %w", err)
	}
	return fromNanos(next), nil
}

// CountHandoffs returns how many handoffs are in each status; every status is present, 0 when none is.
func (db *DB) CountHandoffs(ctx context.Context) (map[HandoffStatus]int, error) {
	counts := map[HandoffStatus]int{}
	for _, s := range HandoffStatuses {
		counts[s] = 0
	}
	err := eachRow(ctx, db.sql, "count handoffs", func(rows *sql.Rows) error {
		var s HandoffStatus
		var n int
		err := rows.Scan(&s, &n)
		counts[s] = n
		return err
	}, "SELECT status, count(*) FROM handoffs GROUP BY status")
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// PendingHandoffs counts task's pending handoffs (VIBE_HANDOFF_MAX bounds them).
func (db *DB) PendingHandoffs(ctx context.Context, taskID string) (int, error) {
	var n int
	err := db.sql.QueryRowContext(ctx, "SELECT count(*) FROM handoffs WHERE status = ? AND task_id = ?",
		HandoffPending, taskID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count task %s's pending handoffs: %w", taskID, err)
	}
	return n, nil
}
