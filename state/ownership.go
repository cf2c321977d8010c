package state

import (
	"context"
	"database/sql"
	"fmt"
	"sort"

	"vibebrowser/mux/errdefs"
)

// ReplaceOwnership saves the mux's tab ownership of one browser (client id → its target ids, in the
// mux's order), replacing what was saved before, so a manager that adopts the browser after a
// restart gives every task its tabs back. The key must be reserved or a store id; a target listed
// under two clients is errdefs.ErrInvalid.
func (br Browsers) ReplaceOwnership(ctx context.Context, key string, owners map[string][]string) error {
	clients := make([]string, 0, len(owners))
	seen := make(map[string]string)
	for client, targets := range owners {
		if client == "" {
			return fmt.Errorf("save tab ownership of %s: empty client id: %w", key, errdefs.ErrInvalid)
		}
		for _, target := range targets {
			if target == "" {
				return fmt.Errorf("save tab ownership of %s: empty target id of client %s: %w", key, client, errdefs.ErrInvalid)
			}
			if other, dup := seen[target]; dup {
				return fmt.Errorf("save tab ownership of %s: target %s listed under clients %s and %s: %w",
					key, target, other, client, errdefs.ErrInvalid)
			}
			seen[target] = client
		}
		clients = append(clients, client)
	}
	sort.Strings(clients)
	err := br.db.write(ctx, func(tx *sql.Tx) error {
		if err := checkKey(ctx, tx, key); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM mux_targets WHERE browser_key = ?", key); err != nil {
			return err
		}
		for _, client := range clients {
			for seq, target := range owners[client] {
				if _, err := tx.ExecContext(ctx,
					"INSERT INTO mux_targets (browser_key, target_id, client_id, seq) VALUES (?, ?, ?, ?)",
					key, target, client, seq); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("save tab ownership of %s: %w", key, err)
	}
	return nil
}

// LoadOwnership returns the saved tab ownership of one browser: client id → target ids, in the
// order they were saved. It is empty (not nil) when nothing was saved.
func (br Browsers) LoadOwnership(ctx context.Context, key string) (map[string][]string, error) {
	out := make(map[string][]string)
	err := eachRow(ctx, br.db.sql, "load tab ownership of "+key, func(rows *sql.Rows) error {
		var client, target string
		err := rows.Scan(&client, &target)
		out[client] = append(out[client], target)
		return err
	}, "SELECT client_id, target_id FROM mux_targets WHERE browser_key = ? ORDER BY client_id, seq", key)
	if err != nil {
		return nil, err
	}
	return out, nil
}
