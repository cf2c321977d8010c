package state

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// OpenReadOnly opens the state database at path for reading only: it creates, migrates and writes nothing
// (SQLite may create the -wal and -shm companions it reads a WAL file through), so a reader inspecting a home
// (vibe-browser doctor) never changes it, whether or not a manager runs there.
// A missing file is an error wrapping fs.ErrNotExist; a file that is not ours is ErrForeignFile, one of a
// newer vibe-browser ErrTooNew, and one of an older schema an error saying the manager migrates it at start.
func OpenReadOnly(path string) (*DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("open state: %w", err)
	}
	sdb, err := sql.Open("sqlite3", dsn(abs, "ro"))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", abs, err)
	}
	db := &DB{path: abs, sql: sdb}
	version, err := db.checkOwner(context.Background())
	if err == nil && version < len(migrations) {
		err = fmt.Errorf("state %s has schema version %d and this vibe-browser reads version %d; "+
			"start the manager (it migrates the file) or use the vibe-browser that wrote it", abs, version, len(migrations))
	}
	if err != nil {
		sdb.Close()
		return nil, err
	}
	return db, nil
}
