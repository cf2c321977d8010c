package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"vibebrowser/mux/errdefs"
)

// Timeline is the tasks' timelines (SPEC §15) in the database: reached by DB.Timeline.
type Timeline struct{ db *DB }

// Timeline is the tasks' timelines.
func (db *DB) Timeline() Timeline { return Timeline{db} }

// TimelineEntry is one step of a task's timeline as stored: the API's entry (manager/api.Entry) by its kind
// and the JSON of its body, with what the store queries by. Seq numbers a task's entries from 1, in the order
// they were recorded; File (relative to the home's timeline/ folder) and Bytes are a shot's image, empty once
// the size cap dropped it.
type TimelineEntry struct {
	TaskID   string
	Seq      int64
	StoreID  string // "" for the web browser
	ClientID string // the mux client (a --worker slot's is <task>-wN)
	At       time.Time
	Kind     string // the API's entry kind ("call", "shot", …), stored as it is
	Data     json.RawMessage
	File     string
	Bytes    int64
	InCall   int64 // the seq of the client's call that was running when the step happened; 0 for none
}

// Append records e as its task's next entry (its Seq and, when zero, At are set) and returns it.
func (tl Timeline) Append(ctx context.Context, e TimelineEntry) (TimelineEntry, error) {
	ctx, err := settled(ctx)
	if err == nil {
		err = tl.insert(ctx, tl.db.sql, &e)
	}
	if err != nil {
		return TimelineEntry{}, fmt.Errorf("record a %s of task %s: %w", e.Kind, e.TaskID, err)
	}
	tl.db.wrote()
	return e, nil
}

// AppendCall records call entry e as Append does and gives it, in the same transaction, its client's steps
// of the given kinds that happened from from to to (see link): a reader sees the call with its steps.
func (tl Timeline) AppendCall(ctx context.Context, e TimelineEntry, from, to time.Time, kinds []string) (TimelineEntry, error) {
	ctx, err := settled(ctx)
	if err == nil {
		err = tl.db.write(ctx, func(tx *sql.Tx) error {
			if err := tl.insert(ctx, tx, &e); err != nil {
				return err
			}
			return link(ctx, tx, e.TaskID, e.ClientID, from, to, e.Seq, kinds)
		})
	}
	if err != nil {
		return TimelineEntry{}, fmt.Errorf("record a %s of task %s: %w", e.Kind, e.TaskID, err)
	}
	return e, nil
}

// settled is ctx without its cancellation, unless it has ended: a timeline write is a statement or two,
// and with a context that can end, database/sql and the driver watch it from a goroutine or a callback
// of their own per statement, a good part of a step's CPU. SQLite's busy timeout still bounds the wait for
// the write lock.
func settled(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return context.WithoutCancel(ctx), nil
}

// appendEntry numbers e as its task's next entry and inserts it, in one statement (a lone one is its own
// transaction, whose write lock SQLite takes before it reads the last seq).
const appendEntry = `INSERT INTO timeline (task_id, seq, store_id, client_id, at, kind, data, file, bytes, in_call)
	SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9 FROM timeline WHERE task_id = ?1 RETURNING seq`

// insert records e as its task's next entry, setting its Seq and, when zero, its At.
func (tl Timeline) insert(ctx context.Context, q queryer, e *TimelineEntry) error {
	if e.TaskID == "" || e.Kind == "" {
		return fmt.Errorf("a timeline entry needs a task and a kind: %w", errdefs.ErrInvalid)
	}
	if e.At.IsZero() {
		e.At = time.Now()
	}
	if len(e.Data) == 0 {
		e.Data = json.RawMessage("{}")
	}
	return q.QueryRowContext(ctx, appendEntry, e.TaskID, nullString(e.StoreID), e.ClientID, e.At.UnixNano(),
		e.Kind, string(e.Data), e.File, e.Bytes, e.InCall).Scan(&e.Seq)
}

// List returns task's entries after seq after, in order, at most limit of them (0: all).
func (tl Timeline) List(ctx context.Context, taskID string, after int64, limit int) ([]TimelineEntry, error) {
	if limit <= 0 {
		limit = -1 // SQLite: no limit
	}
	return tl.list(ctx, taskID, `SELECT `+timelineColumns+` FROM timeline WHERE task_id = ? AND seq > ?
		ORDER BY seq LIMIT ?`, taskID, after, limit)
}

// OfCall returns the steps of task's call seq call (those whose InCall it is), in order.
func (tl Timeline) OfCall(ctx context.Context, taskID string, call int64) ([]TimelineEntry, error) {
	return tl.list(ctx, taskID, `SELECT `+timelineColumns+` FROM timeline WHERE task_id = ? AND in_call = ?
		AND in_call > 0 ORDER BY seq`, taskID, call)
}

const timelineColumns = "task_id, seq, store_id, client_id, at, kind, data, file, bytes, in_call"

func (tl Timeline) list(ctx context.Context, taskID, query string, args ...any) ([]TimelineEntry, error) {
	rows, err := tl.db.sql.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("timeline of task %s: %w", taskID, err)
	}
	defer rows.Close()
	var out []TimelineEntry
	for rows.Next() {
		var e TimelineEntry
		var store sql.NullString
		var at int64
		var data string
		if err := rows.Scan(&e.TaskID, &e.Seq, &store, &e.ClientID, &at, &e.Kind, &data, &e.File, &e.Bytes, &e.InCall); err != nil {
			return nil, fmt.Errorf("timeline of task %s: %w", taskID, err)
		}
		e.StoreID, e.At, e.Data = store.String, time.Unix(0, at), json.RawMessage(data)
		out = append(out, e)
	}
	return out, rows.Err()
}

// link gives call (the seq of one of task's calls, by client) the steps of that client of the given kinds that
// happened from from to to and belong to no call yet, or to an earlier one (whose window, stretched past its
// end for late steps, reached into this call's).
func link(ctx context.Context, tx *sql.Tx, taskID, clientID string, from, to time.Time, call int64, kinds []string) error {
	if len(kinds) == 0 {
		return nil
	}
	args := []any{call, taskID, clientID, call, call, from.UnixNano(), to.UnixNano()}
	for _, k := range kinds {
		args = append(args, k)
	}
	_, err := tx.ExecContext(ctx, `UPDATE timeline SET in_call = ? WHERE task_id = ? AND client_id = ? AND in_call < ?
		AND seq < ? AND at >= ? AND at <= ? AND kind IN (?`+strings.Repeat(", ?", len(kinds)-1)+`)`, args...)
	return err
}

// Prune removes every entry recorded before cutoff and returns the shot files they named, for the
// caller to remove.
func (tl Timeline) Prune(ctx context.Context, cutoff time.Time) ([]string, error) {
	var files []string
	err := tl.db.write(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, "DELETE FROM timeline WHERE at < ? RETURNING file", cutoff.UnixNano())
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var f string
			if err := rows.Scan(&f); err != nil {
				return err
			}
			if f != "" {
				files = append(files, f)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("prune the timeline: %w", err)
	}
	return files, nil
}

// timelineBytes is what task's timeline takes: its entries' data and its shots' files.
const timelineBytes = "SELECT COALESCE(SUM(octet_length(data) + bytes), 0) FROM timeline WHERE task_id = ?"

// Bytes is the bytes task's timeline takes (VIBE_TIMELINE_MAX_MB bounds them): its entries' data
// and its shots' files.
func (tl Timeline) Bytes(ctx context.Context, taskID string) (int64, error) {
	var n int64
	if err := tl.db.sql.QueryRowContext(ctx, timelineBytes, taskID).Scan(&n); err != nil {
		return 0, fmt.Errorf("size the timeline of task %s: %w", taskID, err)
	}
	return n, nil
}

// CapShots drops task's oldest shots until its timeline (Bytes) takes at most maxBytes,
// or no shot is left, and returns the files dropped, for the caller to remove, and the bytes the timeline
// takes then. The entries stay, without their file: the step happened.
func (tl Timeline) CapShots(ctx context.Context, taskID string, maxBytes int64) ([]string, int64, error) {
	var files []string
	var total int64
	err := tl.db.write(ctx, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, timelineBytes, taskID).Scan(&total); err != nil {
			return err
		}
		if total <= maxBytes {
			return nil
		}
		rows, err := tx.QueryContext(ctx, "SELECT seq, file, bytes FROM timeline WHERE task_id = ? AND file != '' ORDER BY seq", taskID)
		if err != nil {
			return err
		}
		var drop []int64
		for total > maxBytes && rows.Next() {
			var seq, n int64
			var f string
			if err := rows.Scan(&seq, &f, &n); err != nil {
				rows.Close()
				return err
			}
			drop, files, total = append(drop, seq), append(files, f), total-n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for _, seq := range drop {
			if _, err := tx.ExecContext(ctx, "UPDATE timeline SET file = '', bytes = 0 WHERE task_id = ? AND seq = ?", taskID, seq); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("cap the shots of task %s: %w", taskID, err)
	}
	return files, total, nil
}
