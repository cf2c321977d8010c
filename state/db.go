package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mattn/go-sqlite3"

	"vibebrowser/mux/errdefs"
)

// busyTimeout bounds how long a writer waits for another writer (this process or another
// manager's CLI) before SQLITE_BUSY. Write transactions are a few statements, so waiting this
// long means something is wrong, not merely busy.
const busyTimeout = 10 * time.Second

// maxIdleConns is how many connections the pool keeps open while idle: more than the manager's goroutines
// ever hold at once in the call bench.
const maxIdleConns = 8

// DB is the manager's state database. It is safe for concurrent use, also by several processes
// opening the same file: every write runs in a BEGIN IMMEDIATE transaction, so writers queue on
// the busy timeout instead of failing on a stale snapshot.
type DB struct {
	path string
	sql  *sql.DB

	changeMu sync.Mutex    // changeMu guards changed
	changed  chan struct{} // closed by the next write; nil until Changed is asked

	stores atomic.Uint64 // StoresVersion
}

// Open opens the state database at path, creating it (mode 0600, parent directory 0700) when
// missing and migrating it to the current schema. A file that is not SQLite, belongs to another
// application, or was written by a newer vibe-browser is refused with an error naming it
// (ErrForeignFile, ErrTooNew) and left untouched.
func Open(path string) (*DB, error) {
	tuneMalloc()
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open state %s: %w", abs, err)
	}
	// Create the file ourselves so its mode is 0600 whatever the umask; SQLite gives the -wal and
	// -shm files the database file's mode.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in the message
		}
		return nil, fmt.Errorf("open state %s: %w", abs, err)
	}
	f.Close()

	// mode=rw: never let SQLite create a file of its own if ours vanished in between.
	// No _journal_mode here: switching to WAL writes the file, which must wait until we know it is ours.
	// synchronous=NORMAL: in WAL mode it never corrupts the file; a power cut may only lose the last commits
	// (a lease renewal, an ownership snapshot), and every ensure no longer waits for an fsync.
	sdb, err := sql.Open("sqlite3", dsn(abs, "rw"))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", abs, err)
	}
	// database/sql keeps 2 idle connections by default and closes the others as they come back: a third
	// statement at once (a timeline step beside a call's entry and an ownership write) opened a connection,
	// which parses the whole schema, and closed it again.
	sdb.SetMaxIdleConns(maxIdleConns)
	db := &DB{path: abs, sql: sdb}
	if err := db.init(context.Background()); err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}

// dsn is the data source name of the file at abs, opened in mode (rw or ro).
func dsn(abs, mode string) string {
	return fmt.Sprintf("file:%s?mode=%s&_busy_timeout=%d&_foreign_keys=on&_txlock=immediate&_synchronous=NORMAL",
		(&url.URL{Path: abs}).EscapedPath(), mode, busyTimeout.Milliseconds())
}

// Path returns the absolute path of the database file.
func (db *DB) Path() string { return db.path }

// Close closes the database.
func (db *DB) Close() error { return db.sql.Close() }

func (db *DB) init(ctx context.Context) error {
	version, err := db.checkOwner(ctx)
	if err != nil {
		return err
	}
	if err := db.enableWAL(ctx); err != nil {
		return fmt.Errorf("state %s: enable WAL: %w", db.path, err)
	}
	if version < len(migrations) {
		if err := db.migrate(ctx, len(migrations)); err != nil {
			return err
		}
	}
	if err := os.Chmod(db.path, 0o600); err != nil {
		return fmt.Errorf("state %s: %w", db.path, err)
	}
	return nil
}

// enableWAL switches the file to WAL (a persistent setting). The switch needs the file to itself
// and SQLite answers SQLITE_BUSY at once rather than calling the busy handler when another
// connection (a second process creating the same new file) holds it, so retry like that handler
// would, within the same bound.
func (db *DB) enableWAL(ctx context.Context) error {
	deadline := time.Now().Add(busyTimeout)
	for {
		var mode string
		err := db.sql.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		var serr sqlite3.Error
		if !errors.As(err, &serr) || (serr.Code != sqlite3.ErrBusy && serr.Code != sqlite3.ErrLocked) || time.Now().After(deadline) {
			if err == nil && mode != "wal" {
				err = fmt.Errorf("journal mode is %q", mode)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// checkOwner reads the file's identity without writing it and returns its schema version.
func (db *DB) checkOwner(ctx context.Context) (int, error) {
	// One statement reads one snapshot: another process may be migrating the file right now.
	var appID, version, objects int
	err := db.sql.QueryRowContext(ctx, `SELECT
		(SELECT application_id FROM pragma_application_id),
		(SELECT user_version FROM pragma_user_version),
		(SELECT count(*) FROM sqlite_schema)`).Scan(&appID, &version, &objects)
	var serr sqlite3.Error
	if errors.As(err, &serr) && (serr.Code == sqlite3.ErrNotADB || serr.Code == sqlite3.ErrCorrupt) {
		return 0, fmt.Errorf("state %s is not a usable SQLite database (%v); move it aside or use another VIBE_HOME: %w",
			db.path, serr, ErrForeignFile)
	}
	if err != nil {
		return 0, fmt.Errorf("open state %s: %w", db.path, err)
	}
	switch {
	case appID == applicationID && version > len(migrations):
		return 0, fmt.Errorf("state %s has schema version %d; this vibe-browser knows up to %d, upgrade it: %w",
			db.path, version, len(migrations), ErrTooNew)
	case appID == applicationID:
		return version, nil
	case appID == 0 && version == 0 && objects == 0:
		return 0, nil // empty: a new file, or one whose first migration never committed
	default:
		return 0, fmt.Errorf("state %s is another application's SQLite database (application_id %#x, user_version %d, %d schema objects); move it aside or use another VIBE_HOME: %w",
			db.path, appID, version, objects, ErrForeignFile)
	}
}

// migrate brings the schema to version target, one transaction per step. Each step re-reads
// user_version inside its transaction, so two processes opening a new file at once apply it once.
func (db *DB) migrate(ctx context.Context, target int) error {
	for {
		done, err := db.migrateStep(ctx, target)
		if err != nil || done {
			return err
		}
	}
}

func (db *DB) migrateStep(ctx context.Context, target int) (done bool, err error) {
	err = db.write(ctx, func(tx *sql.Tx) error {
		var version int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
			return err
		}
		if version >= target {
			done = true
			return nil
		}
		if _, err := tx.ExecContext(ctx, migrations[version]); err != nil {
			return fmt.Errorf("to version %d: %w", version+1, err)
		}
		// PRAGMA takes no bound parameters; version+1 is our own integer.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", version+1))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("migrate state %s: %w", db.path, err)
	}
	return done, nil
}

// write runs fn in one write transaction (BEGIN IMMEDIATE, from the DSN's _txlock).
func (db *DB) write(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := db.sql.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	db.wrote()
	return nil
}

// exec runs one write statement outside a transaction (SQLite commits it by itself).
func (db *DB) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	res, err := db.sql.ExecContext(ctx, query, args...)
	if err == nil {
		db.wrote()
	}
	return res, err
}

// Changed returns a channel that is closed once this DB has committed its next write, of any table: the
// web UI's live pages read the state again when it closes instead of every half second. A caller takes a
// new channel after each close. Only this process's writes count (it is the only writer: the manager).
func (db *DB) Changed() <-chan struct{} {
	db.changeMu.Lock()
	defer db.changeMu.Unlock()
	if db.changed == nil {
		db.changed = make(chan struct{})
	}
	return db.changed
}

// wrote closes the channel of Changed, after a commit, so whoever wakes reads the new rows.
func (db *DB) wrote() {
	db.changeMu.Lock()
	defer db.changeMu.Unlock()
	if db.changed != nil {
		close(db.changed)
		db.changed = nil
	}
}

// StoresVersion moves after each committed write of the stores table (a store created, changed or
// deleted) and at no other write: whoever keeps what it read of the stores reads them again once it moved.
// Read it before the stores it goes with. Only this process's writes count (the manager is the only writer).
func (db *DB) StoresVersion() uint64 { return db.stores.Load() }

// queryer is what read helpers need, so they run inside a write transaction or on the pool alike.
type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// nanos stores t as Unix nanoseconds, or NULL for the zero time.
func nanos(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}

// fromNanos is the inverse of nanos.
func fromNanos(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.Unix(0, n.Int64)
}

// ReservedKeyPrefix starts the browser keys of the manager's own browsers (the web browser's, api.WebKey):
// store ids never start with it, so both share one namespace.
const ReservedKeyPrefix = "_"

// checkKey makes sure a browser key is reserved or names an existing store, so rows keyed by a store are
// never orphaned (DeleteStore removes a store's keyed rows).
func checkKey(ctx context.Context, q queryer, key string) error {
	if strings.HasPrefix(key, ReservedKeyPrefix) && len(key) > 1 {
		return nil
	}
	var one int
	err := q.QueryRowContext(ctx, "SELECT 1 FROM stores WHERE id = ?", key).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("browser key %q is neither reserved (%q…) nor a store id: %w", key, ReservedKeyPrefix, errdefs.ErrNotFound)
	}
	return err
}
