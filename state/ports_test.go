package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"vibebrowser/mux/errdefs"
)

func allFree(int) bool { return true }

func TestAllocatePort(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	a, b, c := mustStore(t, db, "A"), mustStore(t, db, "B"), mustStore(t, db, "C")

	if p, err := db.Ports().Allocate(ctx, a.ID, 9400, allFree); err != nil || p != 9400 {
		t.Fatalf("AllocatePort(a) = %d, %v; want 9400", p, err)
	}
	// 9401 fails the bind test, 9402 is free: b gets 9402 and the test was asked about both.
	var asked []int
	busy := func(p int) bool { asked = append(asked, p); return p != 9401 }
	if p, err := db.Ports().Allocate(ctx, b.ID, 9400, busy); err != nil || p != 9402 {
		t.Fatalf("AllocatePort(b) = %d, %v; want 9402", p, err)
	}
	if fmt.Sprint(asked) != "[9401 9402]" {
		t.Errorf("bind test asked about %v; want [9401 9402] (9400 is held, so never asked)", asked)
	}
	// The web browser is a key in the same registry.
	if p, err := db.Ports().Allocate(ctx, webKey, 9400, allFree); err != nil || p != 9401 {
		t.Fatalf("AllocatePort(web) = %d, %v; want 9401", p, err)
	}
	// A registered port comes back without a bind test: its owner may be listening on it.
	never := func(p int) bool { t.Errorf("bind test called for a registered key (port %d)", p); return false }
	if p, err := db.Ports().Allocate(ctx, a.ID, 9000, never); err != nil || p != 9400 {
		t.Fatalf("AllocatePort(a) again = %d, %v; want the registered 9400", p, err)
	}
	if s, err := db.GetStore(ctx, b.ID); err != nil || s.ProxyPort != 9402 {
		t.Errorf("GetStore(b).ProxyPort = %d, %v; want 9402", s.ProxyPort, err)
	}
	if p, err := db.Ports().Lookup(ctx, webKey); err != nil || p != 9401 {
		t.Errorf("LookupPort(web) = %d, %v; want 9401", p, err)
	}
	ports, err := db.Ports().List(ctx)
	if err != nil || fmt.Sprint(ports) != fmt.Sprint(map[string]int{a.ID: 9400, webKey: 9401, b.ID: 9402}) {
		t.Errorf("ListPorts = %v, %v", ports, err)
	}

	if err := db.Ports().Release(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ports().Lookup(ctx, a.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("LookupPort after ReleasePort = %v; want errdefs.ErrNotFound", err)
	}
	if err := db.Ports().Release(ctx, a.ID); err != nil {
		t.Errorf("ReleasePort twice = %v; want nil", err)
	}
	if p, err := db.Ports().Allocate(ctx, c.ID, 9400, allFree); err != nil || p != 9400 {
		t.Errorf("AllocatePort(c) after release = %d, %v; want the released 9400", p, err)
	}

	refusals := []struct {
		name string
		key  string
		base int
		free func(int) bool
		want error
	}{
		{"unknown key", "nope", 9400, allFree, errdefs.ErrNotFound},
		{"base 0", a.ID, 0, allFree, errdefs.ErrInvalid},
		{"base too high", a.ID, 65536, allFree, errdefs.ErrInvalid},
		{"nothing free", a.ID, 65530, func(int) bool { return false }, errdefs.ErrUnavailable},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if p, err := db.Ports().Allocate(ctx, tt.key, tt.base, tt.free); !errors.Is(err, tt.want) {
				t.Fatalf("AllocatePort(%q, %d) = %d, %v; want %v", tt.key, tt.base, p, err, tt.want)
			}
		})
	}
	if _, err := db.Ports().Lookup(ctx, a.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a refused allocation registered a port: %v", err)
	}
}

// TestConcurrentWriters runs writers on two handles of one file, as the manager and a second
// process would: ports are never shared, each key gets exactly one, and no writer sees SQLITE_BUSY.
func TestConcurrentWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	dbs := []*DB{openPath(t, path), openPath(t, path)}
	ctx := context.Background()
	const workers, keysPerWorker, rounds = 8, 4, 3

	var keys [workers][keysPerWorker]string
	for w := range workers {
		for k := range keysPerWorker {
			keys[w][k] = mustStore(t, dbs[0], fmt.Sprintf("w%d k%d", w, k)).ID
		}
	}

	type result struct {
		key  string
		port int
	}
	results := make(chan result, workers*keysPerWorker*rounds)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			db := dbs[w%2]
			for r := range rounds {
				for k := range keysPerWorker {
					// Every worker also asks for every other worker's first key, on the other handle.
					for _, key := range []string{keys[w][k], keys[(w+1)%workers][0]} {
						p, err := db.Ports().Allocate(ctx, key, 30000, allFree)
						if err != nil {
							errs <- err
							return
						}
						if key == keys[w][k] {
							results <- result{key, p}
						}
					}
					id := fmt.Sprintf("task-%d-%d", w, k)
					if _, err := db.UpsertTask(ctx, Task{ID: id, StoreID: keys[w][k], Status: TaskRunning}); err != nil {
						errs <- err
						return
					}
					if _, err := dbs[(w+1)%2].TouchTask(ctx, "shared-task", keys[0][0], time.Unix(1700000000+int64(r), 0)); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(results)
	close(errs)
	for err := range errs {
		t.Errorf("concurrent writer: %v", err)
	}

	portOf := map[string]int{}
	keyOf := map[int]string{}
	for r := range results {
		if p, ok := portOf[r.key]; ok && p != r.port {
			t.Errorf("key %s got ports %d and %d", r.key, p, r.port)
		}
		if k, ok := keyOf[r.port]; ok && k != r.key {
			t.Errorf("port %d given to keys %s and %s", r.port, k, r.key)
		}
		portOf[r.key], keyOf[r.port] = r.port, r.key
	}
	if len(portOf) != workers*keysPerWorker {
		t.Errorf("%d keys got ports; want %d", len(portOf), workers*keysPerWorker)
	}
	// Lowest-first with nothing busy: the ports are exactly the first workers*keysPerWorker.
	for p := 30000; p < 30000+workers*keysPerWorker; p++ {
		if _, ok := keyOf[p]; !ok {
			t.Errorf("port %d skipped", p)
		}
	}
	tasks, err := dbs[1].ListTasks(ctx)
	if err != nil || len(tasks) != workers*keysPerWorker+1 {
		t.Errorf("ListTasks = %d tasks, %v; want %d", len(tasks), err, workers*keysPerWorker+1)
	}
}
