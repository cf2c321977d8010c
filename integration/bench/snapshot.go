package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"vibebrowser/manager/seal"
	"vibebrowser/manager/snapshot"
)

// snapshotPages is how many pages the profile has loaded before it is snapshotted (SPEC §18's benchmark).
const (
	snapshotPages = 20
	snapshotRuns  = 7
)

// benchSnapshot measures one snapshot of a real profile after 20 page loads (each setting cookies, a
// localStorage item and an IndexedDB record), taken as at a clean stop, and its restore: time and size.
func benchSnapshot(ctx context.Context, env *benchEnv) ([]Row, error) {
	if env.chromium == "" {
		return nil, errors.New("no Chromium installed (set VIBE_CHROME)")
	}
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := strings.TrimPrefix(r.URL.Path, "/p/")
		for i := range 3 {
			http.SetCookie(w, &http.Cookie{Name: fmt.Sprintf("c%s_%d", n, i), Value: strings.Repeat("v", 64), MaxAge: 86400, HttpOnly: i == 0})
		}
		fmt.Fprintf(w, `<html><body><script>
localStorage.setItem("item%[1]s", "x".repeat(2048));
const rq = indexedDB.open("db", 1);
rq.onupgradeneeded = () => rq.result.createObjectStore("s");
rq.onsuccess = () => { const t = rq.result.transaction("s", "readwrite"); t.objectStore("s").put("y".repeat(4096), "k%[1]s");
  t.oncomplete = () => { document.title = "done" } };
</script>page %[1]s</body></html>`, n)
	}))
	defer site.Close()
	chr, err := benchLaunchChromium(env.chromium)
	if err != nil {
		return nil, err
	}
	defer chr.stop()
	c, err := benchDial(chr.ws)
	if err != nil {
		return nil, err
	}
	if err := c.prepare(); err != nil {
		return nil, err
	}
	for i := range snapshotPages {
		if _, err := c.call("Page.navigate", map[string]any{"url": site.URL + "/p/" + strconv.Itoa(i)}); err != nil {
			return nil, err
		}
		if err := waitUntil(ctx, 20*time.Second, func() bool {
			res, err := c.call("Runtime.evaluate", map[string]any{"returnByValue": true, "expression": `document.title === "done"`})
			return err == nil && bytes.Contains(res, []byte(`"value":true`))
		}); err != nil {
			return nil, fmt.Errorf("page %d: %w", i, err)
		}
	}
	// A clean stop, as the manager's: Chromium writes its databases and exits.
	c.call("Browser.close", nil)
	c.ws.Close()
	exited := make(chan struct{})
	go func() { chr.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		return nil, errors.New("chromium did not exit after Browser.close")
	}

	key, err := seal.NewKey(bytes.Repeat([]byte{1}, 32))
	if err != nil {
		return nil, err
	}
	st := &snapshot.Store{Dir: filepath.Join(env.tmp, "snapshots"), Keep: snapshotRuns,
		Key: func() (*seal.Key, error) { return key, nil }}
	jar := bytes.Repeat([]byte("c"), 64<<10) // a checkpoint of a few hundred cookies
	var takes, restores []time.Duration
	var info snapshot.Info
	for i := range snapshotRuns {
		began := time.Now()
		if info, err = st.Take("bench", chr.dir, jar, snapshot.Full); err != nil {
			return nil, err
		}
		takes = append(takes, time.Since(began))
		dest := filepath.Join(env.tmp, "restored-"+strconv.Itoa(i))
		began = time.Now()
		if _, err := st.Restore("bench", info.ID, dest); err != nil {
			return nil, err
		}
		restores = append(restores, time.Since(began))
		os.RemoveAll(dest)
	}
	kept, err := dirSize(chr.dir, snapshot.Kept)
	if err != nil {
		return nil, err
	}
	t50, t95, t99 := percentiles(takes)
	r50, r95, r99 := percentiles(restores)
	name := fmt.Sprintf("profile after %d page loads", snapshotPages)
	return []Row{
		{Group: "snapshot", Name: "snapshot of a " + name, P50: t50, P95: t95, P99: t99, OK: true},
		{Group: "snapshot", Name: "restore of it into a fresh folder", P50: r50, P95: r95, P99: r99, OK: true},
		{Group: "snapshot", Name: "its size, sealed", Value: float64(info.Size) / 1024, Unit: "KiB", OK: true},
		{Group: "snapshot", Name: "the kept files' size, in the clear", Value: float64(kept) / 1024, Unit: "KiB", OK: true},
	}, nil
}

// dirSize is the bytes of the regular files under dir whose slash path keep accepts.
func dirSize(dir string, keep func(string) bool) (int64, error) {
	var n int64
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if keep(filepath.ToSlash(rel)) {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}
