package state

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// RecordRelaunch records a relaunch of key's dead browser at at, for the per-store relaunch budget
// (SPEC §4.5). Persisting it keeps a crash-looping browser from getting a fresh budget with every
// manager restart.
func (br Browsers) RecordRelaunch(ctx context.Context, key string, at time.Time) error {
	err := br.db.write(ctx, func(tx *sql.Tx) error {
		if err := checkKey(ctx, tx, key); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO relaunch_attempts (key, at) VALUES (?, ?)", key, at.UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("record relaunch of %s: %w", key, err)
	}
	return nil
}

// CountRelaunches returns how many relaunches of key were recorded at or after since.
func (br Browsers) CountRelaunches(ctx context.Context, key string, since time.Time) (int, error) {
	var n int
	err := br.db.sql.QueryRowContext(ctx, "SELECT count(*) FROM relaunch_attempts WHERE key = ? AND at >= ?",
		key, since.UnixNano()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count relaunches of %s: %w", key, err)
	}
	return n, nil
}

// ClearRelaunches forgets key's relaunches: a healthy launch restores the full budget.
func (br Browsers) ClearRelaunches(ctx context.Context, key string) error {
	if _, err := br.db.exec(ctx, "DELETE FROM relaunch_attempts WHERE key = ?", key); err != nil {
		return fmt.Errorf("clear relaunches of %s: %w", key, err)
	}
	return nil
}
