package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"vibebrowser/mux/errdefs"
)

// Identities are generated here and nowhere else: store ids, slugs (Slug) and mux URL tokens.

// NewToken returns a random 128-bit value in hex: a store's mux URL token.
func NewToken() string {
	var b [16]byte
	rand.Read(b[:]) // never fails: crypto/rand.Read crashes the program instead
	return hex.EncodeToString(b[:])
}

// newID returns a random UUID-shaped (version 4) store id. Hex never starts with '_', so ids and the
// the reserved keys (ReservedKeyPrefix) share one namespace safely.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// webTokenSetting is the settings key of the web browser's mux token.
const webTokenSetting = "web_token"

// WebToken returns the web browser's mux URL token, generating and storing it on first use. Concurrent
// first uses agree: the first token stored wins and every caller reads that one.
func (db *DB) WebToken(ctx context.Context) (string, error) {
	token, err := db.GetSetting(ctx, webTokenSetting)
	if !errors.Is(err, errdefs.ErrNotFound) {
		return token, err
	}
	if _, err := db.exec(ctx, "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
		webTokenSetting, NewToken()); err != nil {
		return "", fmt.Errorf("store the web token: %w", err)
	}
	return db.GetSetting(ctx, webTokenSetting)
}
