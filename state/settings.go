package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"vibebrowser/mux/errdefs"
)

// GetSetting returns the value stored under key.
func (db *DB) GetSetting(ctx context.Context, key string) (string, error) {
	var v string
	err := db.sql.QueryRowContext(ctx, "SELECT value FROM settings WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		err = errdefs.ErrNotFound
	}
	if err != nil {
		return "", fmt.Errorf("setting %q: %w", key, err)
	}
	return v, nil
}

// SetSetting stores value under key, replacing any earlier value.
func (db *DB) SetSetting(ctx context.Context, key, value string) error {
	if key == "" {
		return fmt.Errorf("set setting: empty key: %w", errdefs.ErrInvalid)
	}
	_, err := db.exec(ctx,
		"INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
		key, value)
	if err != nil {
		return fmt.Errorf("set setting %q: %w", key, err)
	}
	return nil
}
