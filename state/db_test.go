package state

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// webKey is a reserved browser key as the manager uses one (api.WebKey); state knows no browser by name.
const webKey = ReservedKeyPrefix + "web"

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTest opens a fresh database in a temporary directory, closed when the test ends.
func openTest(t *testing.T) *DB {
	t.Helper()
	return openPath(t, filepath.Join(t.TempDir(), "state.db"))
}

func openPath(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return db
}

// rawDB opens path with the driver alone, bypassing Open's checks, to build files of any shape.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	raw, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	raw.SetMaxOpenConns(1)
	return raw
}

func mustExec(t *testing.T, q interface {
	Exec(string, ...any) (sql.Result, error)
}, query string, args ...any) {
	t.Helper()
	if _, err := q.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func pragmaInt(t *testing.T, db *sql.DB, name string) int {
	t.Helper()
	var v int
	if err := db.QueryRow("PRAGMA " + name).Scan(&v); err != nil {
		t.Fatalf("PRAGMA %s: %v", name, err)
	}
	return v
}

// schemaOf describes every table, index and trigger, so two schemas compare as strings.
func schemaOf(t *testing.T, db *sql.DB) string {
	t.Helper()
	rows, err := db.Query("SELECT type, name, coalesce(sql, '') FROM sqlite_schema ORDER BY type, name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var typ, name, text string
		if err := rows.Scan(&typ, &name, &text); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %s: %s\n", typ, name, text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	home := filepath.Join(t.TempDir(), "home")
	path := filepath.Join(home, "state.db")
	db := openPath(t, path)
	if db.Path() != path {
		t.Errorf("Path() = %q; want %q", db.Path(), path)
	}
	for _, f := range []struct {
		path string
		mode os.FileMode
	}{{home, 0o700 | os.ModeDir}, {path, 0o600}, {path + "-wal", 0o600}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != f.mode {
			t.Errorf("mode of %s = %v; want %v", f.path, fi.Mode(), f.mode)
		}
	}
	var journal string
	if err := db.sql.QueryRow("PRAGMA journal_mode").Scan(&journal); err != nil || journal != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", journal, err)
	}
	var fk, busy int
	if err := db.sql.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
		t.Errorf("foreign_keys = %d, %v; want 1", fk, err)
	}
	if err := db.sql.QueryRow("PRAGMA busy_timeout").Scan(&busy); err != nil || busy != int(busyTimeout.Milliseconds()) {
		t.Errorf("busy_timeout = %d, %v; want %d", busy, err, busyTimeout.Milliseconds())
	}
	if got := pragmaInt(t, db.sql, "synchronous"); got != 1 {
		t.Errorf("synchronous = %d; want 1 (NORMAL)", got)
	}
	if got := pragmaInt(t, db.sql, "application_id"); got != applicationID {
		t.Errorf("application_id = %#x; want %#x", got, applicationID)
	}
}

func TestOpenTightensLooseFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	openPath(t, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode of %s = %v; want 0600", path, fi.Mode())
	}
}

func TestOpenPathNeedingEscapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir%20", "state.db")
	db := openPath(t, path)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("Open(%q) did not create that file: %v", path, err)
	}
	if err := db.SetSetting(context.Background(), "k", "v"); err != nil {
		t.Fatal(err)
	}
}

// fixtures[v] inserts rows into a database at schema version v, and check (after the upgrade to
// the current version) proves they survived. Every version needs one: a new migration without a
// fixture fails TestMigrateFromEveryVersion.
var fixtures = map[int]struct {
	insert string
	check  func(t *testing.T, db *DB)
}{
	1: {
		insert: `
INSERT INTO stores (id, name, slug, backend, config, token, created_at, updated_at)
	VALUES ('s1', 'Shop', 'shop', 'chrome', '{"headless":true}', 'tok', 1, 2);
INSERT INTO ports (port, key, created_at) VALUES (9400, 's1', 1);
INSERT INTO tasks (id, store_id, status, created_at, updated_at) VALUES ('t1', 's1', 'running', 1, 1);
INSERT INTO settings (key, value) VALUES ('k', 'v');`,
		check: func(t *testing.T, db *DB) {
			ctx := context.Background()
			s, err := db.GetStore(ctx, "s1")
			if err != nil || s.Slug != "shop" || s.ProxyPort != 9400 || string(s.Config) != `{"headless":true}` {
				t.Errorf("GetStore(s1) = %+v, %v; want the fixture store", s, err)
			}
			if task, err := db.GetTask(ctx, "t1"); err != nil || task.Status != TaskRunning {
				t.Errorf("GetTask(t1) = %+v, %v; want the fixture task", task, err)
			}
			if v, err := db.GetSetting(ctx, "k"); err != nil || v != "v" {
				t.Errorf("GetSetting(k) = %q, %v; want v", v, err)
			}
		},
	},
	2: {
		insert: `
INSERT INTO stores (id, name, slug, backend, config, token, created_at, updated_at)
	VALUES ('s1', 'Shop', 'shop', 'chrome', '{}', 'tok', 1, 2);
INSERT INTO browser_versions (key, version, seen_at) VALUES ('s1', '{"Browser":"Chrome/1.2"}', 3);`,
		check: func(t *testing.T, db *DB) {
			v, err := db.Browsers().Version(context.Background(), "s1")
			if err != nil || !strings.Contains(string(v), "Chrome/1.2") {
				t.Errorf("BrowserVersion(s1) = %s, %v; want the fixture's", v, err)
			}
		},
	},
	3: {
		insert: `
INSERT INTO stores (id, name, slug, backend, config, token, created_at, updated_at)
	VALUES ('s1', 'Shop', 'shop', 'chrome', '{}', 'tok', 1, 2);
INSERT INTO downloads (browser_key, task_id, client_id, owner_dir, guid, url, name, path, size, sha256, at)
	VALUES ('s1', 't1', 't1', 't1', 'g1', 'https://shop.example/r.csv', 'r.csv', '/h/downloads/shop/t1/r.csv', 3, 'abc', 4);`,
		check: func(t *testing.T, db *DB) {
			ds, err := db.ListDownloads(context.Background(), DownloadFilter{Key: "s1"})
			if err != nil || len(ds) != 1 || ds[0].Name != "r.csv" {
				t.Errorf("ListDownloads(s1) = %+v, %v; want the fixture's download", ds, err)
			}
		},
	},
	4: {
		insert: `
INSERT INTO stores (id, name, slug, backend, config, token, created_at, updated_at)
	VALUES ('s1', 'Shop', 'shop', 'chrome', '{}', 'tok', 1, 2);
INSERT INTO handoffs (id, store_id, task_id, client_id, bu_name, reason, status, created_at, deadline)
	VALUES ('0123456789ab', 's1', 't1', 't1', 'shop-t1', 'solve the captcha', 'pending', 1, 2);`,
		check: func(t *testing.T, db *DB) {
			h, err := db.GetHandoff(context.Background(), "0123456789ab")
			if err != nil || h.Status != HandoffPending || h.Reason != "solve the captcha" {
				t.Errorf("GetHandoff = %+v, %v; want the fixture's pending handoff", h, err)
			}
		},
	},
	5: {
		insert: `
INSERT INTO stores (id, name, slug, backend, config, token, created_at, updated_at)
	VALUES ('s1', 'Shop', 'shop', 'chrome', '{}', 'tok', 1, 2);
INSERT INTO tasks (id, store_id, status, created_at, updated_at) VALUES ('t1', 's1', 'running', 1, 1);
INSERT INTO task_tokens (hash, task_id, store_id, created_at)
	VALUES ('` + tokenHash("0123456789abcdef0123456789abcdef") + `', 't1', 's1', 1);`,
		check: func(t *testing.T, db *DB) {
			tt, err := db.LookupTaskToken(context.Background(), "0123456789abcdef0123456789abcdef")
			if err != nil || tt.TaskID != "t1" || tt.StoreID != "s1" {
				t.Errorf("LookupTaskToken = %+v, %v; want the fixture's token of t1 on s1", tt, err)
			}
		},
	},
	6: {
		insert: `
INSERT INTO stores (id, name, slug, backend, config, token, created_at, updated_at)
	VALUES ('s1', 'Shop', 'shop', 'chrome', '{}', 'tok', 1, 2);
INSERT INTO timeline (task_id, seq, store_id, client_id, at, kind, data)
	VALUES ('t1', 1, 's1', 't1', 5, 'nav', '{"tab":"T1","url":"https://shop.example/"}');`,
		check: func(t *testing.T, db *DB) {
			es, err := db.Timeline().List(context.Background(), "t1", 0, 0)
			if err != nil || len(es) != 1 || es[0].Kind != "nav" || es[0].InCall != 0 {
				t.Errorf("ListTimeline(t1) = %+v, %v; want the fixture's nav, in no call", es, err)
			}
		},
	},
}

func TestMigrateFromEveryVersion(t *testing.T) {
	fresh := openTest(t)
	want := schemaOf(t, fresh.sql)
	for from := 0; from < len(migrations); from++ {
		t.Run(fmt.Sprintf("v%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			raw := rawDB(t, path)
			for v := 0; v < from; v++ {
				mustExec(t, raw, migrations[v])
				mustExec(t, raw, fmt.Sprintf("PRAGMA user_version = %d", v+1))
			}
			fx, ok := fixtures[from]
			if from > 0 && !ok {
				t.Fatalf("no fixture for schema version %d: add one to fixtures", from)
			}
			if ok {
				mustExec(t, raw, fx.insert)
			}
			if err := raw.Close(); err != nil {
				t.Fatal(err)
			}

			db := openPath(t, path)
			if got := pragmaInt(t, db.sql, "user_version"); got != len(migrations) {
				t.Errorf("user_version after Open = %d; want %d", got, len(migrations))
			}
			if got := schemaOf(t, db.sql); got != want {
				t.Errorf("schema migrated from v%d:\n%s\nwant (fresh):\n%s", from, got, want)
			}
			if ok {
				fx.check(t, db)
			}
		})
	}
}

func TestMigrationRollsBackOnError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db := openPath(t, path)
	ctx := context.Background()
	// A migration that fails half-way must leave neither its first statement nor a new version.
	saved := migrations
	migrations = append(append([]string(nil), saved...), "CREATE TABLE half (x); CREATE TABLE half (x);")
	t.Cleanup(func() { migrations = saved })
	err := db.migrate(ctx, len(migrations))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("migrate with a broken step = %v; want an error naming %s", err, path)
	}
	if got := pragmaInt(t, db.sql, "user_version"); got != len(saved) {
		t.Errorf("user_version = %d; want %d", got, len(saved))
	}
	var n int
	if err := db.sql.QueryRow("SELECT count(*) FROM sqlite_schema WHERE name = 'half'").Scan(&n); err != nil || n != 0 {
		t.Errorf("table of the failed step: count %d, %v; want 0", n, err)
	}
}

// TestConcurrentOpenOfNewFile: a manager and a CLI may create the state file at the same moment;
// each migration step must run once and neither may fail on the other's lock.
func TestConcurrentOpenOfNewFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	const n = 6
	dbs := make([]*DB, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { dbs[i], errs[i] = Open(path) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("Open #%d: %v", i, errs[i])
			continue
		}
		if got := pragmaInt(t, dbs[i].sql, "user_version"); got != len(migrations) {
			t.Errorf("Open #%d: user_version = %d; want %d", i, got, len(migrations))
		}
		if err := dbs[i].Close(); err != nil {
			t.Error(err)
		}
	}
}

func TestReopenKeepsData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := context.Background()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateStore(ctx, Store{Name: "Shop", Backend: BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openPath(t, path)
	got, err := db.GetStore(ctx, s.ID)
	if err != nil || got.Token != s.Token {
		t.Fatalf("GetStore after reopen = %+v, %v; want %+v", got, err, s)
	}
}

// refuse asserts that Open refuses path with target, names the file, and leaves it byte for byte.
func refuse(t *testing.T, path string, target error) {
	t.Helper()
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(path)
	if err == nil {
		db.Close()
		t.Fatalf("Open(%q) succeeded; want %v", path, target)
	}
	if !errors.Is(err, target) {
		t.Errorf("Open(%q) = %v; want %v", path, err, target)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("Open(%q) = %q; want the error to name the file", path, err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("Open(%q) changed the refused file", path)
	}
}

func TestOpenRefusesCorruptFile(t *testing.T) {
	tests := []struct {
		name    string
		content func() []byte
	}{
		{"random bytes", func() []byte {
			b := make([]byte, 8192)
			rand.Read(b)
			return b
		}},
		{"text", func() []byte { return []byte("this is my shopping list\n") }},
		{"truncated SQLite header", func() []byte { return []byte("SQLite format 3\x00\x10\x00") }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			if err := os.WriteFile(path, tt.content(), 0o600); err != nil {
				t.Fatal(err)
			}
			refuse(t, path, ErrForeignFile)
		})
	}
}

func TestOpenRefusesForeignDatabase(t *testing.T) {
	tests := []struct {
		name  string
		setup string
	}{
		{"other app's tables", "CREATE TABLE users (id INTEGER PRIMARY KEY, email TEXT); INSERT INTO users (email) VALUES ('a@b.c')"},
		{"other app's user_version", "PRAGMA user_version = 1"},
		{"other app's application_id", "PRAGMA application_id = 42; PRAGMA user_version = 1"},
		{"our table names, no marker", migrations[0][strings.Index(migrations[0], "CREATE"):]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			raw := rawDB(t, path)
			mustExec(t, raw, tt.setup)
			if err := raw.Close(); err != nil {
				t.Fatal(err)
			}
			refuse(t, path, ErrForeignFile)
		})
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, db.sql, fmt.Sprintf("PRAGMA user_version = %d", len(migrations)+1))
	// Checkpoint so the newer version sits in the main file and refuse can compare its bytes.
	mustExec(t, db.sql, "PRAGMA wal_checkpoint(TRUNCATE)")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	refuse(t, path, ErrTooNew)
}

func TestOpenRefusesDirectory(t *testing.T) {
	path := t.TempDir()
	if db, err := Open(path); err == nil {
		db.Close()
		t.Fatalf("Open(%q) on a directory succeeded", path)
	} else if !strings.Contains(err.Error(), path) {
		t.Errorf("Open(%q) = %q; want the error to name the path", path, err)
	}
}

func TestNanosRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{{}, time.Unix(1700000000, 123456789), time.Unix(0, 1)} {
		if got := fromNanos(nanos(tm)); !got.Equal(tm) {
			t.Errorf("fromNanos(nanos(%v)) = %v", tm, got)
		}
	}
}

// The pool keeps the connections a burst of statements opened: each new connection parses the whole schema.
func TestPoolKeepsItsConnections(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	var conns []*sql.Conn
	for range 4 {
		c, err := db.sql.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Close()
	}
	if st := db.sql.Stats(); st.MaxIdleClosed != 0 || st.Idle < 4 {
		t.Errorf("after 4 connections at once the pool closed %d and keeps %d idle; want none closed, 4 kept", st.MaxIdleClosed, st.Idle)
	}
}
