package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"vibebrowser/mux/errdefs"
)

// Browsers is what the database keeps of each browser key (a store id or the web browser's): its last known
// session, its version object, its tabs' ownership and its relaunches. Reached by DB.Browsers.
type Browsers struct{ db *DB }

// Browsers is the records of each browser key.
func (db *DB) Browsers() Browsers { return Browsers{db} }

// BrowserStatus is a browser session's recorded state.
type BrowserStatus string

// Browser statuses.
const (
	BrowserRunning BrowserStatus = "running"
	BrowserStopped BrowserStatus = "stopped"
)

// BrowserSession is the last known browser of a store or of the web browser: what a restarted
// manager needs to adopt it instead of killing it (SPEC §4.1).
type BrowserSession struct {
	Key string // a store id or a reserved key
	// PID is the browser's main process, 0 when the manager runs no process (cdp, ziniao).
	PID int
	// PIDStartTime is the process's start time: with PID it tells our browser from a reused pid.
	PIDStartTime time.Time
	// CDPEndpoint is the upstream endpoint the mux connects to.
	CDPEndpoint string
	Status      BrowserStatus
	// Adopted is true when the running manager took the browser over from a previous one instead
	// of launching it; the mux skips its fresh-launch tab cleanup then.
	Adopted   bool
	StartedAt time.Time
	StoppedAt time.Time // zero while running
	UpdatedAt time.Time // set by the database
}

const sessionColumns = `key, pid, pid_start_time, cdp_endpoint, status, adopted, started_at, stopped_at, updated_at`

func scanSession(row rowScanner) (BrowserSession, error) {
	var s BrowserSession
	var pidStart, started, stopped, updated sql.NullInt64
	err := row.Scan(&s.Key, &s.PID, &pidStart, &s.CDPEndpoint, &s.Status, &s.Adopted, &started, &stopped, &updated)
	s.PIDStartTime, s.StartedAt, s.StoppedAt, s.UpdatedAt =
		fromNanos(pidStart), fromNanos(started), fromNanos(stopped), fromNanos(updated)
	return s, err
}

// UpsertSession records s as the browser of s.Key, replacing any earlier record. The key
// must be reserved or an existing store id (errdefs.ErrNotFound otherwise).
func (br Browsers) UpsertSession(ctx context.Context, s BrowserSession) (BrowserSession, error) {
	if s.Status != BrowserRunning && s.Status != BrowserStopped {
		return BrowserSession{}, fmt.Errorf("browser session %s: status %q: want running or stopped: %w", s.Key, s.Status, errdefs.ErrInvalid)
	}
	if s.PID < 0 {
		return BrowserSession{}, fmt.Errorf("browser session %s: pid %d: %w", s.Key, s.PID, errdefs.ErrInvalid)
	}
	err := br.db.write(ctx, func(tx *sql.Tx) error {
		if err := checkKey(ctx, tx, s.Key); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO browser_sessions (`+sessionColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET pid = excluded.pid, pid_start_time = excluded.pid_start_time,
				cdp_endpoint = excluded.cdp_endpoint, status = excluded.status, adopted = excluded.adopted,
				started_at = excluded.started_at, stopped_at = excluded.stopped_at, updated_at = excluded.updated_at`,
			s.Key, s.PID, nanos(s.PIDStartTime), s.CDPEndpoint, s.Status, s.Adopted,
			nanos(s.StartedAt), nanos(s.StoppedAt), time.Now().UnixNano())
		if err != nil {
			return err
		}
		s, err = getSession(ctx, tx, s.Key)
		return err
	})
	if err != nil {
		return BrowserSession{}, fmt.Errorf("record browser session %s: %w", s.Key, err)
	}
	return s, nil
}

// MarkStopped records that the browser of key stopped at at, keeping the rest of its
// record (pid, endpoint) for diagnosis.
func (br Browsers) MarkStopped(ctx context.Context, key string, at time.Time) error {
	res, err := br.db.exec(ctx,
		"UPDATE browser_sessions SET status = ?, stopped_at = ?, updated_at = ? WHERE key = ?",
		BrowserStopped, nanos(at), time.Now().UnixNano(), key)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n == 0 {
			err = errdefs.ErrNotFound
		}
	}
	if err != nil {
		return fmt.Errorf("mark browser %s stopped: %w", key, err)
	}
	return nil
}

// GetSession returns the recorded browser of key.
func (br Browsers) GetSession(ctx context.Context, key string) (BrowserSession, error) {
	s, err := getSession(ctx, br.db.sql, key)
	if err != nil {
		return BrowserSession{}, fmt.Errorf("browser session %s: %w", key, err)
	}
	return s, nil
}

// ListSessions returns every recorded browser, by key.
func (br Browsers) ListSessions(ctx context.Context) ([]BrowserSession, error) {
	return allRows(ctx, br.db.sql, "list browser sessions", scanSession,
		"SELECT "+sessionColumns+" FROM browser_sessions ORDER BY key")
}

func getSession(ctx context.Context, q queryer, key string) (BrowserSession, error) {
	s, err := scanSession(q.QueryRowContext(ctx, "SELECT "+sessionColumns+" FROM browser_sessions WHERE key = ?", key))
	if errors.Is(err, sql.ErrNoRows) {
		return BrowserSession{}, errdefs.ErrNotFound
	}
	return s, err
}
