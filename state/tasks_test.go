package state

import (
	"context"
	"errors"
	"testing"
	"time"

	"vibebrowser/mux/errdefs"
)

func TestUpsertTask(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	lease := time.Unix(1700000000, 5)

	got, err := db.UpsertTask(ctx, Task{ID: "0123abcd-task", StoreID: s.ID, Status: TaskQueued, LeaseUntil: lease})
	if err != nil {
		t.Fatal(err)
	}
	if got.StoreID != s.ID || got.Status != TaskQueued || !got.LeaseUntil.Equal(lease) || got.CreatedAt.IsZero() {
		t.Fatalf("UpsertTask = %+v", got)
	}
	created := got.CreatedAt

	got, err = db.UpsertTask(ctx, Task{ID: "0123abcd-task", Status: TaskCompleted})
	if err != nil {
		t.Fatal(err)
	}
	if got.StoreID != s.ID || got.Status != TaskCompleted || !got.LeaseUntil.IsZero() || !got.CreatedAt.Equal(created) {
		t.Fatalf("UpsertTask replacing without a store = %+v; want its store kept, completed, no lease, created %v", got, created)
	}
	other := mustStore(t, db, "Other")
	if moved, err := db.UpsertTask(ctx, Task{ID: "0123abcd-task", StoreID: other.ID, Status: TaskCompleted}); err != nil || moved.StoreID != other.ID {
		t.Fatalf("UpsertTask naming another store = %+v, %v; want store %s", moved, err, other.ID)
	}
	got, err = db.UpsertTask(ctx, Task{ID: "0123abcd-task", StoreID: s.ID, Status: TaskCompleted})
	if err != nil {
		t.Fatal(err)
	}
	if read, err := db.GetTask(ctx, "0123abcd-task"); err != nil || read != got {
		t.Fatalf("GetTask = %+v, %v; want %+v", read, err, got)
	}

	refusals := []struct {
		name string
		in   Task
		want error
	}{
		{"unknown store", Task{ID: "t2", StoreID: "nope", Status: TaskRunning}, errdefs.ErrNotFound},
		{"bad status", Task{ID: "t2", Status: "done"}, errdefs.ErrInvalid},
		{"empty id", Task{Status: TaskRunning}, errdefs.ErrInvalid},
		{"id with space", Task{ID: "a b", Status: TaskRunning}, errdefs.ErrInvalid},
		{"id too long", Task{ID: string(make([]byte, 65)), Status: TaskRunning}, errdefs.ErrInvalid},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.UpsertTask(ctx, tt.in); !errors.Is(err, tt.want) {
				t.Fatalf("UpsertTask(%+v) = %v; want %v", tt.in, err, tt.want)
			}
		})
	}
	if list, err := db.ListTasks(ctx); err != nil || len(list) != 1 {
		t.Fatalf("ListTasks after refusals = %+v, %v; want one task", list, err)
	}
}

func TestTouchTask(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	other := mustStore(t, db, "Other")
	l1, l2 := time.Unix(1700000000, 0), time.Unix(1700003600, 0)

	got, err := db.TouchTask(ctx, "deadbeef-1", s.ID, l1)
	if err != nil || got.Status != TaskRunning || got.StoreID != s.ID || !got.LeaseUntil.Equal(l1) {
		t.Fatalf("TouchTask(unknown) = %+v, %v; want running on %s until %v", got, err, s.ID, l1)
	}
	if _, err := db.UpsertTask(ctx, Task{ID: "deadbeef-1", StoreID: s.ID, Status: TaskWaiting, LeaseUntil: l1}); err != nil {
		t.Fatal(err)
	}
	got, err = db.TouchTask(ctx, "deadbeef-1", other.ID, l2)
	if err != nil || got.Status != TaskWaiting || got.StoreID != s.ID || !got.LeaseUntil.Equal(l2) {
		t.Fatalf("TouchTask(known) = %+v, %v; want status and store kept, lease %v", got, err, l2)
	}
	if got, err := db.TouchTask(ctx, "deadbeef-2", "", l1); err != nil || got.StoreID != "" {
		t.Fatalf("TouchTask(web task) = %+v, %v", got, err)
	}
	for name, err := range map[string]error{
		"unknown store": func() error { _, err := db.TouchTask(ctx, "deadbeef-3", "nope", l1); return err }(),
		"zero lease":    func() error { _, err := db.TouchTask(ctx, "deadbeef-3", s.ID, time.Time{}); return err }(),
		"bad id":        func() error { _, err := db.TouchTask(ctx, "a/b", s.ID, l1); return err }(),
	} {
		if err == nil {
			t.Errorf("TouchTask with %s succeeded", name)
		}
	}
	if _, err := db.GetTask(ctx, "deadbeef-3"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetTask after refused touches = %v; want errdefs.ErrNotFound", err)
	}
}

func TestRenewAndDeleteTask(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	if _, err := db.UpsertTask(ctx, Task{ID: "t1", Status: TaskRunning}); err != nil {
		t.Fatal(err)
	}
	until := time.Unix(1800000000, 42)
	if err := db.RenewLease(ctx, "t1", until); err != nil {
		t.Fatal(err)
	}
	if got, err := db.GetTask(ctx, "t1"); err != nil || !got.LeaseUntil.Equal(until) || got.Status != TaskRunning {
		t.Fatalf("GetTask after RenewLease = %+v, %v; want lease %v", got, err, until)
	}
	if err := db.RenewLease(ctx, "nope", until); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("RenewLease(nope) = %v; want errdefs.ErrNotFound", err)
	}
	if err := db.DeleteTask(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetTask(ctx, "t1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetTask after DeleteTask = %v; want errdefs.ErrNotFound", err)
	}
	if err := db.DeleteTask(ctx, "t1"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("DeleteTask twice = %v; want errdefs.ErrNotFound", err)
	}
}

func TestListActiveTasks(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	now := time.Unix(1700000000, 0)
	leases := map[string]time.Time{"none": {}, "valid": now.Add(time.Minute), "expired": now.Add(-time.Minute), "edge": now}
	want := map[string]bool{}
	for _, st := range TaskStatuses {
		for lname, lease := range leases {
			id := string(st) + "-" + lname
			if _, err := db.UpsertTask(ctx, Task{ID: id, Status: st, LeaseUntil: lease}); err != nil {
				t.Fatal(err)
			}
			task := Task{Status: st, LeaseUntil: lease}
			if task.Active(now) {
				want[id] = true
			}
			wantActive := st.Active() && (lname == "none" || lname == "valid")
			if task.Active(now) != wantActive {
				t.Errorf("Task{%s, lease %s}.Active = %v; want %v", st, lname, task.Active(now), wantActive)
			}
			wantHolds := st.HoldsBrowser() && (lname == "none" || lname == "valid")
			if task.HoldsBrowser(now) != wantHolds {
				t.Errorf("Task{%s, lease %s}.HoldsBrowser = %v; want %v", st, lname, task.HoldsBrowser(now), wantHolds)
			}
		}
	}
	got, err := db.ListActiveTasks(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range got {
		if !want[task.ID] {
			t.Errorf("ListActiveTasks returned %s; want it left out", task.ID)
		}
		delete(want, task.ID)
	}
	for id := range want {
		t.Errorf("ListActiveTasks left out %s", id)
	}
	all, err := db.ListTasks(ctx)
	if err != nil || len(all) != len(TaskStatuses)*len(leases) {
		t.Errorf("ListTasks = %d tasks, %v; want %d", len(all), err, len(TaskStatuses)*len(leases))
	}
}
