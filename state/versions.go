package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"vibebrowser/mux/errdefs"
)

// SaveVersion records v as the version object (Chrome's /json/version, without its
// webSocketDebuggerUrl) the browser of key last answered, replacing any earlier one. The key must be
// a reserved key or an existing store id (errdefs.ErrNotFound otherwise); v must be a JSON object (errdefs.ErrInvalid).
func (br Browsers) SaveVersion(ctx context.Context, key string, v json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(v, &obj); err != nil {
		return fmt.Errorf("save browser version of %s: want a JSON object: %v: %w", key, err, errdefs.ErrInvalid)
	}
	err := br.db.write(ctx, func(tx *sql.Tx) error {
		if err := checkKey(ctx, tx, key); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO browser_versions (key, version, seen_at) VALUES (?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET version = excluded.version, seen_at = excluded.seen_at`,
			key, string(v), time.Now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("save browser version of %s: %w", key, err)
	}
	return nil
}

// Version returns the version object the browser of key last answered; errdefs.ErrNotFound when none was
// ever seen.
func (br Browsers) Version(ctx context.Context, key string) (json.RawMessage, error) {
	var v string
	err := br.db.sql.QueryRowContext(ctx, "SELECT version FROM browser_versions WHERE key = ?", key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		err = errdefs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("browser version of %s: %w", key, err)
	}
	return json.RawMessage(v), nil
}
