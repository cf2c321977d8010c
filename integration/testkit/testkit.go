// Package testkit holds the helpers every test package shares: waiting for a condition, a test logger,
// listing the files a test left in a folder, reading a manager's metrics and checking a JSON object's keys.
package testkit

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// pollEvery is how often WaitFor checks its condition: short next to any deadline a test sets, long enough
// not to steal a core from the processes under test.
const pollEvery = 5 * time.Millisecond

// WaitFor polls cond until it holds, and fails the test when within passes first, naming what it waited for.
func WaitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", within, what)
		}
		time.Sleep(pollEvery)
	}
}

// Log returns a debug-level logger that writes to t's log, so a failing test shows what the code logged.
func Log(t testing.TB) zerolog.Logger {
	t.Helper()
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
}

// Files lists the files below root (folders left out), as sorted paths relative to root; a missing root
// has none.
func Files(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out
}

// WriteFiles creates each file (relative to root, its name as its content) with mtime at, its folder too.
func WriteFiles(t *testing.T, root string, at time.Time, files ...string) {
	t.Helper()
	for _, name := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(name), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(filepath.Dir(p), at, at); err != nil {
			t.Fatal(err)
		}
	}
}
