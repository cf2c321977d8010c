package state

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"vibebrowser/mux/errdefs"
)

func TestTaskTokens(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s, err := db.CreateStore(ctx, Store{Name: "Shop", Backend: BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	const task, other = "a1b2c3d4-0000-4000-8000-000000000001", "a1b2c3d4-0000-4000-8000-000000000002"
	for _, id := range []string{task, other} {
		if _, err := db.TouchTask(ctx, id, s.ID, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := db.MintTaskToken(ctx, task, s.ID)
	if err != nil || len(tok) != 32 {
		t.Fatalf("MintTaskToken = %q, %v; want 128 bits in hex", tok, err)
	}
	again, _ := db.MintTaskToken(ctx, task, s.ID)
	if again == tok {
		t.Error("two tokens minted for one task are the same")
	}
	if tt, err := db.LookupTaskToken(ctx, tok); err != nil || tt != (TaskToken{TaskID: task, StoreID: s.ID}) {
		t.Errorf("LookupTaskToken = %+v, %v; want the task on its store", tt, err)
	}
	var kept string
	if err := db.sql.QueryRowContext(ctx, "SELECT group_concat(hash) FROM task_tokens").Scan(&kept); err != nil ||
		strings.Contains(kept, tok) {
		t.Errorf("task_tokens holds %q (%v); want only the hashes", kept, err)
	}
	for _, bad := range []string{"", "00000000000000000000000000000000", strings.ToUpper(tok), tok[:31]} {
		if _, err := db.LookupTaskToken(ctx, bad); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("LookupTaskToken(%q) = %v; want errdefs.ErrNotFound", bad, err)
		}
	}
	if _, err := db.MintTaskToken(ctx, "ffffffff-0000-4000-8000-000000000009", s.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a token for an unknown task: %v; want errdefs.ErrNotFound", err)
	}
	otherTok, _ := db.MintTaskToken(ctx, other, s.ID)
	if _, err := db.UpsertTask(ctx, Task{ID: task, StoreID: s.ID, Status: TaskCompleted}); err != nil {
		t.Fatal(err)
	}
	for _, dead := range []string{tok, again} {
		if _, err := db.LookupTaskToken(ctx, dead); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("the token of an ended task: %v; want errdefs.ErrNotFound", err)
		}
	}
	if _, err := db.MintTaskToken(ctx, task, s.ID); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("a token for an ended task: %v; want errdefs.ErrInvalid", err)
	}
	if tt, err := db.LookupTaskToken(ctx, otherTok); err != nil || tt.TaskID != other {
		t.Errorf("another task's token after the first ended = %+v, %v; want it alive", tt, err)
	}
	if err := db.DeleteStore(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LookupTaskToken(ctx, otherTok); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("a token of a removed store's task: %v; want errdefs.ErrNotFound", err)
	}
}
