package state

import (
	"context"
	"testing"
	"time"
)

// TestChangedClosesOnEachWrite: a write in a transaction and a lone statement both close the channel of
// Changed; a read or a failed write does not.
func TestChangedClosesOnEachWrite(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	tests := []struct {
		name  string
		do    func() error
		wakes bool
	}{
		{"a read", func() error { _, err := db.ListTasks(ctx); return err }, false},
		{"a transaction", func() error {
			_, err := db.UpsertTask(ctx, Task{ID: "0123abcd-task", StoreID: s.ID, Status: TaskRunning})
			return err
		}, true},
		{"one statement", func() error { return db.RenewLease(ctx, "0123abcd-task", time.Now().Add(time.Hour)) }, true},
		{"a refused transaction", func() error {
			_, err := db.UpsertTask(ctx, Task{ID: "0123abcd-task", StoreID: "no-such-store"})
			if err == nil {
				t.Fatal("UpsertTask of an unknown store succeeded")
			}
			return nil
		}, false},
	}
	for _, tt := range tests {
		ch := db.Changed()
		if err := tt.do(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := closed(ch); got != tt.wakes {
			t.Errorf("after %s Changed() is closed: %v; want %v", tt.name, got, tt.wakes)
		}
		if tt.wakes && closed(db.Changed()) {
			t.Errorf("after %s the next Changed() is closed already; want a fresh one", tt.name)
		}
	}
}

// TestStoresVersionMovesOnStoreWrites: creating, changing and deleting a store move StoresVersion; a read,
// another table's write and a refused change of a store do not.
func TestStoresVersionMovesOnStoreWrites(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	tests := []struct {
		name  string
		do    func() error
		moves bool
	}{
		{"a read", func() error { _, err := db.GetStore(ctx, s.ID); return err }, false},
		{"a task's write", func() error {
			_, err := db.UpsertTask(ctx, Task{ID: "0123abcd-task", StoreID: s.ID, Status: TaskRunning})
			return err
		}, false},
		{"a change", func() error {
			_, err := db.UpdateStore(ctx, s.ID, func(st *Store) error { st.Config = []byte(`{"timeline":"off"}`); return nil })
			return err
		}, true},
		{"a refused change", func() error {
			if _, err := db.UpdateStore(ctx, s.ID, func(st *Store) error { st.Name = ""; return nil }); err == nil {
				t.Fatal("UpdateStore to an empty name succeeded")
			}
			return nil
		}, false},
		{"a new store", func() error { _, err := db.CreateStore(ctx, Store{Name: "Other", Backend: BackendChrome}); return err }, true},
		{"a deletion", func() error { return db.DeleteStore(ctx, s.ID) }, true},
	}
	for _, tt := range tests {
		before := db.StoresVersion()
		if err := tt.do(); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if moved := db.StoresVersion() != before; moved != tt.moves {
			t.Errorf("after %s StoresVersion moved: %v; want %v", tt.name, moved, tt.moves)
		}
	}
}
