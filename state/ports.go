package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"vibebrowser/mux/errdefs"
)

// Ports is the port registry (SPEC §4.4): one port per store, and per reserved key. Reached by DB.Ports.
type Ports struct{ db *DB }

// Ports is the port registry.
func (db *DB) Ports() Ports { return Ports{db} }

// ForwardKey is the registry key of store id's proxy forwarder (SPEC §16): reserved, so checkKey takes it,
// and removed with its store.
func ForwardKey(storeID string) string { return ReservedKeyPrefix + "fwd-" + storeID }

// Allocate returns the port registered for key (a store id or a reserved key), or registers one: the
// lowest port at or above base that no other key holds and for which free reports true (the
// caller's bind test). The check and the insert share one write transaction, so concurrent
// callers, even in other processes, never get the same port for two keys. A registered port is
// returned as is, without calling free: its owner may be the one listening on it.
func (p Ports) Allocate(ctx context.Context, key string, base int, free func(port int) bool) (int, error) {
	if base < 1 || base > 65535 {
		return 0, fmt.Errorf("allocate port for %s: base %d outside 1-65535: %w", key, base, errdefs.ErrInvalid)
	}
	var port int
	err := p.db.write(ctx, func(tx *sql.Tx) error {
		if err := checkKey(ctx, tx, key); err != nil {
			return err
		}
		err := tx.QueryRowContext(ctx, "SELECT port FROM ports WHERE key = ?", key).Scan(&port)
		if err == nil || !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		held, err := heldPorts(ctx, tx, base)
		if err != nil {
			return err
		}
		for p := base; p <= 65535; p++ {
			if held[p] || !free(p) {
				continue
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO ports (port, key, created_at) VALUES (?, ?, ?)",
				p, key, time.Now().UnixNano()); err != nil {
				return err
			}
			port = p
			return nil
		}
		return fmt.Errorf("no free port in %d-65535: %w", base, errdefs.ErrUnavailable)
	})
	if err != nil {
		return 0, fmt.Errorf("allocate port for %s: %w", key, err)
	}
	return port, nil
}

func heldPorts(ctx context.Context, q queryer, from int) (map[int]bool, error) {
	rows, err := q.QueryContext(ctx, "SELECT port FROM ports WHERE port >= ?", from)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	held := make(map[int]bool)
	for rows.Next() {
		var p int
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		held[p] = true
	}
	return held, rows.Err()
}

// Release removes key's port from the registry; releasing a key without one is not an error.
func (p Ports) Release(ctx context.Context, key string) error {
	if _, err := p.db.exec(ctx, "DELETE FROM ports WHERE key = ?", key); err != nil {
		return fmt.Errorf("release port of %s: %w", key, err)
	}
	return nil
}

// Lookup returns the port registered for key.
func (p Ports) Lookup(ctx context.Context, key string) (int, error) {
	var port int
	err := p.db.sql.QueryRowContext(ctx, "SELECT port FROM ports WHERE key = ?", key).Scan(&port)
	if errors.Is(err, sql.ErrNoRows) {
		err = errdefs.ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("port of %s: %w", key, err)
	}
	return port, nil
}

// List returns the whole registry, key → port.
func (p Ports) List(ctx context.Context) (map[string]int, error) {
	out := make(map[string]int)
	err := eachRow(ctx, p.db.sql, "list ports", func(rows *sql.Rows) error {
		var key string
		var port int
		err := rows.Scan(&key, &port)
		out[key] = port
		return err
	}, "SELECT key, port FROM ports")
	if err != nil {
		return nil, err
	}
	return out, nil
}
