package timeline

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"image/jpeg"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"vibebrowser/manager/api"
	"vibebrowser/mux"
)

// Shots (SPEC §15): after a call, the mux's operator API captures each page of the call's client whose
// pixels can have changed since its last shot (the mux's count of its moves: commands, events, a new URL or
// title), as the UI's thumbnails are captured (invisible to every client: no focus, activation or events), and
// a capture whose pixels equal the tab's last shot is not kept. At most one shot per tab per call.

// lastShot is what a tab's last capture saw: the hash of its JPEG and the tab's moves then.
type lastShot struct {
	sum   [32]byte
	moves uint64
}

// Shot size and quality: as wide as the UI shows a page at 1280 px, and a JPEG quality that keeps text
// readable.
const (
	shotWidth   = 1280
	shotQuality = 70
)

// shoot captures the pages of client after the call entry seq and records the changed ones.
func (r *Recorder) shoot(ctx context.Context, w Where, task, client string, seq int64, b Browser) {
	for _, tab := range pages(b.ClientTabs(client)) {
		r.mu.Lock()
		last, shot := r.shots[tab.ID]
		r.mu.Unlock()
		if shot && last.moves == tab.Moves {
			continue // nothing happened to it since: a capture would show the last shot again
		}
		if r.room(ctx, w, task, api.EntryShot) != nil {
			break
		}
		jpg, err := b.Thumbnail(ctx, tab.ID, shotWidth, shotQuality)
		if err != nil {
			r.cfg.Log.Debug().Err(err).Str("task", task).Str("target", tab.ID).Msg("no shot of a tab")
			continue
		}
		sum := sha256.Sum256(jpg) // the capture of unchanged pixels encodes to the same bytes
		r.mu.Lock()
		same := shot && last.sum == sum
		r.shots[tab.ID] = lastShot{sum: sum, moves: tab.Moves}
		r.mu.Unlock()
		if same {
			continue
		}
		if err := r.keepShot(ctx, w, task, client, seq, tab, jpg); err != nil {
			r.cfg.Log.Error().Err(err).Str("task", task).Str("target", tab.ID).Msg("keep a shot")
		}
	}
	// The cap reads the whole timeline's size in a write transaction: only when the running sum says the
	// task may have passed it.
	r.mu.Lock()
	n, known := r.used[task]
	r.mu.Unlock()
	if known && n <= r.cfg.MaxBytes {
		return
	}
	files, total, err := r.cfg.DB.Timeline().CapShots(ctx, task, r.cfg.MaxBytes)
	if err != nil {
		r.cfg.Log.Error().Err(err).Str("task", task).Msg("cap the task's shots")
		return
	}
	r.setUsed(task, total, files)
}

// pages are the pages among a client's targets, in the order they appeared.
func pages(tabs []mux.TabInfo) []mux.TabInfo {
	var out []mux.TabInfo
	for _, t := range tabs {
		if t.Type == "page" && !t.Human {
			out = append(out, t)
		}
	}
	return out
}

// keepShot writes the shot's file (0600, in a 0700 folder of the task's, made when missing) and records its
// entry.
func (r *Recorder) keepShot(ctx context.Context, w Where, task, client string, seq int64, tab mux.TabInfo, jpg []byte) error {
	rel := filepath.Join(w.Slug, task, strconv.FormatInt(r.cfg.Now().UnixNano(), 36)+"-"+strconv.FormatInt(seq, 10)+".jpg")
	path := filepath.Join(r.cfg.Dir, rel)
	err := os.WriteFile(path, jpg, 0o600)
	if errors.Is(err, fs.ErrNotExist) { // the task's first shot, or its folder went with its last one (remove)
		if err = os.MkdirAll(filepath.Dir(path), 0o700); err == nil {
			err = os.WriteFile(path, jpg, 0o600)
		}
	}
	if err != nil {
		return err
	}
	shot := api.ShotEntry{Tab: tab.ID, URL: tab.URL, Title: tab.Title, AfterOf: seq}
	if c, err := jpeg.DecodeConfig(bytes.NewReader(jpg)); err == nil {
		shot.Width, shot.Height = c.Width, c.Height
	}
	if _, err := r.append(ctx, w, task, api.Entry{Client: client, Shot: &shot}, rel, int64(len(jpg))); err != nil {
		os.Remove(path)
		return fmt.Errorf("record the shot %s: %w", path, err)
	}
	return nil
}

// remove deletes shot files the state no longer names, and their task's folder once it is empty.
func (r *Recorder) remove(files []string) {
	for _, f := range files {
		path := filepath.Join(r.cfg.Dir, f)
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
			r.cfg.Log.Warn().Err(err).Str("file", path).Msg("remove a dropped shot")
		}
		_ = os.Remove(filepath.Dir(path)) // fails while other shots are in it
	}
}

// setUsed records what state counts of task's timeline after a cap (the running sum is set right), and
// removes the shots' files the cap dropped.
func (r *Recorder) setUsed(task string, total int64, dropped []string) {
	r.mu.Lock()
	r.used[task] = total
	r.mu.Unlock()
	r.remove(dropped)
}
