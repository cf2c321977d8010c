package state

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"vibebrowser/mux/errdefs"
)

// TaskToken is what a task token stands for (SPEC §14): one task on one store ("" for the web browser).
type TaskToken struct {
	TaskID  string
	StoreID string
}

// MintTaskToken makes a token for task id on storeID ("" for the web browser): 128 random bits in hex,
// returned once and kept only as its SHA-256. The task must exist and not have ended.
func (db *DB) MintTaskToken(ctx context.Context, taskID, storeID string) (string, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", fmt.Errorf("mint a task token: %w", err)
	}
	token := hex.EncodeToString(raw)
	err := db.write(ctx, func(tx *sql.Tx) error {
		t, err := getTask(ctx, tx, taskID)
		if err != nil {
			return err
		}
		if t.Status.Ended() {
			return fmt.Errorf("task %s has ended (%s): a token is minted for a task that runs: %w", taskID, t.Status, errdefs.ErrInvalid)
		}
		if err := checkTaskStore(ctx, tx, storeID); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO task_tokens (hash, task_id, store_id, created_at) VALUES (?, ?, ?, ?)",
			tokenHash(token), taskID, nullString(storeID), time.Now().UnixNano())
		return err
	})
	if err != nil {
		return "", fmt.Errorf("mint a token for task %s: %w", taskID, err)
	}
	return token, nil
}

// LookupTaskToken returns what token stands for; errdefs.ErrNotFound for a token never minted, or one of a task that
// has ended or is gone (a token is dead with its task).
func (db *DB) LookupTaskToken(ctx context.Context, token string) (TaskToken, error) {
	var tt TaskToken
	var store sql.NullString
	var status TaskStatus
	err := db.sql.QueryRowContext(ctx, `SELECT k.task_id, k.store_id, t.status FROM task_tokens k
		JOIN tasks t ON t.id = k.task_id WHERE k.hash = ?`, tokenHash(token)).Scan(&tt.TaskID, &store, &status)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return TaskToken{}, fmt.Errorf("task token: %w", errdefs.ErrNotFound)
	case err != nil:
		return TaskToken{}, fmt.Errorf("task token: %w", err)
	case status.Ended():
		return TaskToken{}, fmt.Errorf("task token of task %s, which has ended: %w", tt.TaskID, errdefs.ErrNotFound)
	}
	tt.StoreID = store.String
	return tt, nil
}

// tokenHash is how a token is kept: its SHA-256, in hex. Tokens are 128 random bits, so a plain hash (no
// salt, no stretching) leaves nothing to guess.
func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}
