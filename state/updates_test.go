package state

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// The update paths under the API's PATCH of a store and PUT of a task keep what they were not given. (The
// task's side, UpsertTask without a store and TouchTask of a known task, is in tasks_test.go.)

func TestUpdateStoreKeepsWhatFnLeaves(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s, err := db.CreateStore(ctx, Store{Name: "Zin", Backend: BackendZiniao, Config: json.RawMessage(`{"ziniao_port":17000}`),
		Ziniao: ZiniaoAccount{Company: "co", Username: "me", Password: "pw"}, ZiniaoBrowser: "7"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Ports().Allocate(ctx, s.ID, 19400, func(int) bool { return true }); err != nil {
		t.Fatal(err)
	}
	if s, err = db.GetStore(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	got, err := db.UpdateStore(ctx, s.ID, func(s *Store) error { s.Name = "Zin 2"; return nil })
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.Name, want.UpdatedAt = "Zin 2", got.UpdatedAt
	if !equalStore(got, want) || got.ProxyPort == 0 {
		t.Errorf("UpdateStore(rename only) = %+v; want %+v (only the name changed)", got, want)
	}
}

func TestRenewLeaseKeepsStoreAndStatus(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	if _, err := db.UpsertTask(ctx, Task{ID: "a1b2c3d4-1", StoreID: s.ID, Status: TaskWaiting}); err != nil {
		t.Fatal(err)
	}
	until := time.Unix(1800000000, 0)
	if err := db.RenewLease(ctx, "a1b2c3d4-1", until); err != nil {
		t.Fatal(err)
	}
	if got, err := db.GetTask(ctx, "a1b2c3d4-1"); err != nil || got.StoreID != s.ID || got.Status != TaskWaiting || !got.LeaseUntil.Equal(until) {
		t.Errorf("GetTask after RenewLease = %+v, %v; want store %s and waiting kept, lease %v", got, err, s.ID, until)
	}
}
