package state

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"vibebrowser/mux/errdefs"
)

// Download is one finished download (SPEC §12): which browser, task and client it belongs to, and the file.
type Download struct {
	ID       int64  // set by the database
	Key      string // the browser: a store id or a reserved key
	TaskID   string // the task whose client downloaded it; "" for aux, manual, human and the rest
	ClientID string // the mux client that started it; "" when no client owned its tab
	OwnerDir string // the folder under downloads/<slug>/ that holds it
	GUID     string // Chrome's download id
	URL      string
	Name     string
	Path     string
	Size     int64
	SHA256   string
	At       time.Time
}

// DownloadFilter selects downloads; a zero field matches every value.
type DownloadFilter struct {
	ID     int64
	Key    string
	TaskID string
	Limit  int // only the newest Limit downloads (still listed oldest first); 0: all
}

// RecordDownload stores d and returns it with its id. d.Key must name the web browser or an existing store.
func (db *DB) RecordDownload(ctx context.Context, d Download) (Download, error) {
	if d.OwnerDir == "" || d.Name == "" || d.Path == "" || d.GUID == "" || d.Size < 0 || d.At.IsZero() {
		return Download{}, fmt.Errorf("record download %q: owner folder, name, path, guid, time and a size >= 0 are required: %w", d.Name, errdefs.ErrInvalid)
	}
	err := db.write(ctx, func(tx *sql.Tx) error {
		if err := checkKey(ctx, tx, d.Key); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO downloads
			(browser_key, task_id, client_id, owner_dir, guid, url, name, path, size, sha256, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			d.Key, d.TaskID, d.ClientID, d.OwnerDir, d.GUID, d.URL, d.Name, d.Path, d.Size, d.SHA256, d.At.UnixNano())
		if err != nil {
			return err
		}
		d.ID, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return Download{}, fmt.Errorf("record download %s: %w", d.Path, err)
	}
	return d, nil
}

// ListDownloads returns the downloads f selects, oldest first.
func (db *DB) ListDownloads(ctx context.Context, f DownloadFilter) ([]Download, error) {
	var where []string
	var args []any
	if f.ID != 0 {
		where, args = append(where, "id = ?"), append(args, f.ID)
	}
	if f.Key != "" {
		where, args = append(where, "browser_key = ?"), append(args, f.Key)
	}
	if f.TaskID != "" {
		where, args = append(where, "task_id = ?"), append(args, f.TaskID)
	}
	q := `SELECT id, browser_key, task_id, client_id, owner_dir, guid, url, name, path, size, sha256, at FROM downloads`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	if f.Limit > 0 {
		q = "SELECT * FROM (" + q + " ORDER BY at DESC, id DESC LIMIT ?)"
		args = append(args, f.Limit)
	}
	return allRows(ctx, db.sql, "list downloads", func(row rowScanner) (Download, error) {
		var d Download
		var at int64
		err := row.Scan(&d.ID, &d.Key, &d.TaskID, &d.ClientID, &d.OwnerDir, &d.GUID, &d.URL, &d.Name, &d.Path,
			&d.Size, &d.SHA256, &at)
		d.At = time.Unix(0, at)
		return d, err
	}, q+" ORDER BY at, id", args...)
}

// DeleteDownloads forgets the downloads of key filed in ownerDir (its folder was pruned) and returns how
// many rows went.
func (db *DB) DeleteDownloads(ctx context.Context, key, ownerDir string) (int64, error) {
	res, err := db.exec(ctx, "DELETE FROM downloads WHERE browser_key = ? AND owner_dir = ?", key, ownerDir)
	if err != nil {
		return 0, fmt.Errorf("delete downloads of %s/%s: %w", key, ownerDir, err)
	}
	return res.RowsAffected()
}

// DownloadOwner is one owner folder of one browser's downloads: downloads/<slug>/<owner dir>.
type DownloadOwner struct{ Key, OwnerDir string }

// DownloadBytes sums the sizes of each owner folder's finished downloads (VIBE_DOWNLOAD_MAX_MB bounds a
// task's).
func (db *DB) DownloadBytes(ctx context.Context) (map[DownloadOwner]int64, error) {
	out := map[DownloadOwner]int64{}
	err := eachRow(ctx, db.sql, "sum downloads", func(rows *sql.Rows) error {
		var o DownloadOwner
		var n int64
		err := rows.Scan(&o.Key, &o.OwnerDir, &n)
		out[o] = n
		return err
	}, "SELECT browser_key, owner_dir, SUM(size) FROM downloads GROUP BY browser_key, owner_dir")
	if err != nil {
		return nil, err
	}
	return out, nil
}
