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

// Backend says how a store's browser is run (SPEC §4.6).
type Backend string

// Backends.
const (
	BackendChrome Backend = "chrome" // Chromium launched by the manager
	BackendZiniao Backend = "ziniao" // a Ziniao environment started through the Ziniao client
	BackendCDP    Backend = "cdp"    // an existing CDP endpoint
)

// ParseBackend checks a backend name from the API or CLI.
func ParseBackend(s string) (Backend, error) {
	switch b := Backend(s); b {
	case BackendChrome, BackendZiniao, BackendCDP:
		return b, nil
	}
	return "", fmt.Errorf("backend %q: want chrome, ziniao or cdp: %w", s, errdefs.ErrInvalid)
}

// ZiniaoAccount is the Ziniao login a store's environment belongs to. Only one account may be
// active per machine, so the manager compares accounts across stores.
type ZiniaoAccount struct {
	Company  string
	Username string
	Password string
}

// Store is a seller account with its own browser.
type Store struct {
	ID      string
	Name    string
	Slug    string
	Backend Backend
	// Config holds backend options (CDP URL, headless…) as a JSON object; the manager owns its fields.
	Config json.RawMessage
	// Token is the first path segment of every mux URL of this store.
	Token string
	// ProxyPort is the store's port in the registry (Ports.Allocate); 0 until one is allocated.
	// It is read-only here: the registry is its one source of truth.
	ProxyPort int
	Ziniao    ZiniaoAccount // zero unless Backend is BackendZiniao
	// ZiniaoBrowser is the Ziniao environment id (browserOauth or browserId).
	ZiniaoBrowser string
	CreatedAt     time.Time
	UpdatedAt     time.Time
}

const storeColumns = `s.id, s.name, s.slug, s.backend, s.config, s.token, p.port,
	s.ziniao_company, s.ziniao_username, s.ziniao_password, s.ziniao_browser, s.created_at, s.updated_at`

const storeFrom = ` FROM stores s LEFT JOIN ports p ON p.key = s.id`

func scanStore(row rowScanner) (Store, error) {
	var s Store
	var config string
	var port sql.NullInt64
	var created, updated sql.NullInt64
	err := row.Scan(&s.ID, &s.Name, &s.Slug, &s.Backend, &config, &s.Token, &port,
		&s.Ziniao.Company, &s.Ziniao.Username, &s.Ziniao.Password, &s.ZiniaoBrowser, &created, &updated)
	s.Config = json.RawMessage(config)
	s.ProxyPort = int(port.Int64)
	s.CreatedAt, s.UpdatedAt = fromNanos(created), fromNanos(updated)
	return s, err
}

// CreateStore validates and inserts s. Empty ID, Slug and Token are generated (Slug from the name,
// see Slug); empty Config becomes {}. A taken name or slug, or a reserved slug, is a
// *ConflictError naming the owner store or the rule. It returns the store as stored.
func (db *DB) CreateStore(ctx context.Context, s Store) (Store, error) {
	if s.ID == "" {
		s.ID = newID()
	}
	if s.Slug == "" {
		s.Slug = Slug(s.Name, s.ID)
	}
	if s.Token == "" {
		s.Token = NewToken()
	}
	if len(s.Config) == 0 {
		s.Config = json.RawMessage("{}")
	}
	if err := s.validate(); err != nil {
		return Store{}, fmt.Errorf("create store: %w", err)
	}
	now := time.Now()
	err := db.write(ctx, func(tx *sql.Tx) error {
		if err := checkStoreUnique(ctx, tx, s); err != nil {
			return err
		}
		var owner string
		err := tx.QueryRowContext(ctx, "SELECT name FROM stores WHERE id = ?", s.ID).Scan(&owner)
		if err == nil {
			return &ConflictError{What: "id", Value: s.ID, Owner: s.ID, OwnerName: owner}
		} else if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO stores (id, name, slug, backend, config, token,
			ziniao_company, ziniao_username, ziniao_password, ziniao_browser, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			s.ID, s.Name, s.Slug, s.Backend, string(s.Config), s.Token,
			s.Ziniao.Company, s.Ziniao.Username, s.Ziniao.Password, s.ZiniaoBrowser, now.UnixNano(), now.UnixNano())
		if err != nil {
			return err
		}
		s, err = getStore(ctx, tx, "s.id", s.ID)
		return err
	})
	if err != nil {
		return Store{}, fmt.Errorf("create store %q: %w", s.Name, err)
	}
	db.stores.Add(1)
	return s, nil
}

// UpdateStore applies fn to the stored store id and saves the result, all in one transaction, so
// concurrent updates never lose each other's changes. fn may change every field except ID,
// ProxyPort (see Ports.Allocate) and the timestamps; the same checks as CreateStore apply.
func (db *DB) UpdateStore(ctx context.Context, id string, fn func(*Store) error) (Store, error) {
	var s Store
	err := db.write(ctx, func(tx *sql.Tx) error {
		var err error
		if s, err = getStore(ctx, tx, "s.id", id); err != nil {
			return err
		}
		if err := fn(&s); err != nil {
			return err
		}
		if s.ID != id {
			return fmt.Errorf("store id cannot change (%s → %s): %w", id, s.ID, errdefs.ErrInvalid)
		}
		if len(s.Config) == 0 {
			s.Config = json.RawMessage("{}")
		}
		if err := s.validate(); err != nil {
			return err
		}
		if err := checkStoreUnique(ctx, tx, s); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `UPDATE stores SET name = ?, slug = ?, backend = ?, config = ?, token = ?,
			ziniao_company = ?, ziniao_username = ?, ziniao_password = ?, ziniao_browser = ?, updated_at = ?
			WHERE id = ?`,
			s.Name, s.Slug, s.Backend, string(s.Config), s.Token,
			s.Ziniao.Company, s.Ziniao.Username, s.Ziniao.Password, s.ZiniaoBrowser, time.Now().UnixNano(), id)
		if err != nil {
			return err
		}
		s, err = getStore(ctx, tx, "s.id", id)
		return err
	})
	if err != nil {
		return Store{}, fmt.Errorf("update store %s: %w", id, err)
	}
	db.stores.Add(1)
	return s, nil
}

// DeleteStore deletes a store with everything keyed by it: its browser session, mux tab
// ownership, port, relaunch attempts and tasks.
func (db *DB) DeleteStore(ctx context.Context, id string) error {
	err := db.write(ctx, func(tx *sql.Tx) error {
		for _, q := range []string{
			"DELETE FROM browser_sessions WHERE key = ?",
			"DELETE FROM mux_targets WHERE browser_key = ?",
			"DELETE FROM ports WHERE key = ?",
			"DELETE FROM relaunch_attempts WHERE key = ?",
			"DELETE FROM browser_versions WHERE key = ?",
			"DELETE FROM downloads WHERE browser_key = ?",
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, "DELETE FROM ports WHERE key = ?", ForwardKey(id)); err != nil {
			return err
		}
		// Tasks go by ON DELETE CASCADE.
		res, err := tx.ExecContext(ctx, "DELETE FROM stores WHERE id = ?", id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return errdefs.ErrNotFound
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("delete store %s: %w", id, err)
	}
	db.stores.Add(1)
	return nil
}

// GetStore returns the store with the given id.
func (db *DB) GetStore(ctx context.Context, id string) (Store, error) {
	s, err := getStore(ctx, db.sql, "s.id", id)
	if err != nil {
		return Store{}, fmt.Errorf("store %s: %w", id, err)
	}
	return s, nil
}

// GetStoreBySlug returns the store with the given slug.
func (db *DB) GetStoreBySlug(ctx context.Context, slug string) (Store, error) {
	s, err := getStore(ctx, db.sql, "s.slug", slug)
	if err != nil {
		return Store{}, fmt.Errorf("store with slug %q: %w", slug, err)
	}
	return s, nil
}

// GetStoreByName returns the store with the given name.
func (db *DB) GetStoreByName(ctx context.Context, name string) (Store, error) {
	s, err := getStore(ctx, db.sql, "s.name", name)
	if err != nil {
		return Store{}, fmt.Errorf("store named %q: %w", name, err)
	}
	return s, nil
}

// FindStore resolves what a user typed to name a store (SPEC §4.3): an id, else a slug, else a
// name. Each is unique in its own column, so the order only matters across columns.
func (db *DB) FindStore(ctx context.Context, ref string) (Store, error) {
	for _, col := range []string{"s.id", "s.slug", "s.name"} {
		s, err := getStore(ctx, db.sql, col, ref)
		if !errors.Is(err, errdefs.ErrNotFound) {
			return s, err
		}
	}
	return Store{}, fmt.Errorf("no store has id, slug or name %q: %w", ref, errdefs.ErrNotFound)
}

// ListStores returns every store, oldest first.
func (db *DB) ListStores(ctx context.Context) ([]Store, error) {
	return allRows(ctx, db.sql, "list stores", scanStore, "SELECT "+storeColumns+storeFrom+" ORDER BY s.created_at, s.id")
}

// getStore looks a store up by one unique column (a constant from this file, never user input).
func getStore(ctx context.Context, q queryer, column, value string) (Store, error) {
	s, err := scanStore(q.QueryRowContext(ctx, "SELECT "+storeColumns+storeFrom+" WHERE "+column+" = ?", value))
	if errors.Is(err, sql.ErrNoRows) {
		return Store{}, errdefs.ErrNotFound
	}
	return s, err
}

func (s *Store) validate() error {
	if !validID(s.ID) {
		return fmt.Errorf("store id %q: want 1-64 characters of A-Z, a-z, 0-9 and '-': %w", s.ID, errdefs.ErrInvalid)
	}
	if err := ValidateName(s.Name); err != nil {
		return err
	}
	if err := ValidateSlug(s.Slug); err != nil {
		return err
	}
	if _, err := ParseBackend(string(s.Backend)); err != nil {
		return err
	}
	if s.Token == "" {
		return fmt.Errorf("store token is empty: %w", errdefs.ErrInvalid)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(s.Config, &obj); err != nil || obj == nil {
		return fmt.Errorf("store config %.80q is not a JSON object: %w", s.Config, errdefs.ErrInvalid)
	}
	return nil
}

// checkStoreUnique reports a name or slug already held by another store than s.
func checkStoreUnique(ctx context.Context, q queryer, s Store) error {
	for _, f := range []struct{ what, column, value string }{
		{"name", "name", s.Name},
		{"slug", "slug", s.Slug},
	} {
		var id, name string
		err := q.QueryRowContext(ctx, "SELECT id, name FROM stores WHERE "+f.column+" = ? AND id != ?",
			f.value, s.ID).Scan(&id, &name)
		if err == nil {
			return &ConflictError{What: f.what, Value: f.value, Owner: id, OwnerName: name}
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	return nil
}
