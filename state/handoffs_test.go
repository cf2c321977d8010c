package state

import (
	"context"
	"errors"
	"testing"
	"time"

	"vibebrowser/mux/errdefs"
)

func mustHandoff(t *testing.T, db *DB, storeID string, deadline time.Time) Handoff {
	t.Helper()
	h, err := db.CreateHandoff(context.Background(), Handoff{StoreID: storeID, TaskID: "0123abcd-task",
		ClientID: "0123abcd-task", BUName: "shop-0123abcd", Reason: "a captcha", Deadline: deadline})
	if err != nil {
		t.Fatalf("CreateHandoff: %v", err)
	}
	return h
}

func TestCreateHandoff(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	deadline := time.Now().Add(time.Hour)
	h := mustHandoff(t, db, s.ID, deadline)
	if len(h.ID) != 12 || h.Status != HandoffPending || h.StoreID != s.ID || h.Reason != "a captcha" ||
		!h.Deadline.Equal(time.Unix(0, deadline.UnixNano())) || h.CreatedAt.IsZero() || !h.AnsweredAt.IsZero() {
		t.Fatalf("CreateHandoff = %+v; want a pending handoff of the store with a 12-hex id", h)
	}
	if got, err := db.GetHandoff(ctx, h.ID); err != nil || got != h {
		t.Fatalf("GetHandoff = %+v, %v; want %+v", got, err, h)
	}
	if web := mustHandoff(t, db, "", deadline); web.StoreID != "" || web.ID == h.ID {
		t.Fatalf("a web handoff = %+v; want no store and an id of its own", web)
	}

	refusals := []struct {
		name string
		in   Handoff
		want error
	}{
		{"unknown store", Handoff{StoreID: "nope", ClientID: "c", BUName: "b", Reason: "r", Deadline: deadline}, errdefs.ErrNotFound},
		{"no reason", Handoff{ClientID: "c", BUName: "b", Deadline: deadline}, errdefs.ErrInvalid},
		{"no client", Handoff{BUName: "b", Reason: "r", Deadline: deadline}, errdefs.ErrInvalid},
		{"no deadline", Handoff{ClientID: "c", BUName: "b", Reason: "r"}, errdefs.ErrInvalid},
		{"bad task id", Handoff{TaskID: "a b", ClientID: "c", BUName: "b", Reason: "r", Deadline: deadline}, errdefs.ErrInvalid},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.CreateHandoff(ctx, tt.in); !errors.Is(err, tt.want) {
				t.Fatalf("CreateHandoff(%+v) = %v; want %v", tt.in, err, tt.want)
			}
		})
	}
	if _, err := db.GetHandoff(ctx, "000000000000"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetHandoff(unknown) = %v; want errdefs.ErrNotFound", err)
	}
	if err := db.DeleteStore(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.GetHandoff(ctx, h.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("GetHandoff after its store was deleted = %v; want errdefs.ErrNotFound (it goes with the store)", err)
	}
}

// TestHandoffTransitions: only a pending handoff changes, to each of the final statuses; a final one
// stays as it is and the refusal says what it became.
func TestHandoffTransitions(t *testing.T) {
	finals := []HandoffStatus{HandoffDone, HandoffCantHelp, HandoffCancelled}
	type transition struct {
		name   string
		first  HandoffStatus // timed_out: the deadline passes first
		second HandoffStatus
	}
	var tests []transition
	for _, a := range append(finals, HandoffTimedOut) {
		for _, b := range finals {
			tests = append(tests, transition{string(a) + " then " + string(b), a, b})
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := openTest(t)
			ctx := context.Background()
			at := time.Now()
			h := mustHandoff(t, db, "", at.Add(time.Minute))
			var first Handoff
			if tt.first == HandoffTimedOut {
				expired, err := db.ExpireHandoffs(ctx, at.Add(time.Minute))
				if err != nil || len(expired) != 1 {
					t.Fatalf("ExpireHandoffs at the deadline = %+v, %v; want the handoff", expired, err)
				}
				first = expired[0]
			} else {
				var err error
				if first, err = db.FinishHandoff(ctx, h.ID, tt.first, "first note", at); err != nil {
					t.Fatalf("FinishHandoff(pending → %s) = %v", tt.first, err)
				}
			}
			if first.Status != tt.first || first.AnsweredAt.IsZero() {
				t.Fatalf("after the first transition: %+v; want %s with an answer time", first, tt.first)
			}
			got, err := db.FinishHandoff(ctx, h.ID, tt.second, "second note", at.Add(time.Second))
			if !errors.Is(err, errdefs.ErrConflict) {
				t.Fatalf("FinishHandoff(%s → %s) = %v; want errdefs.ErrConflict", tt.first, tt.second, err)
			}
			if got.Status != tt.first || got.Note != first.Note {
				t.Errorf("FinishHandoff(%s → %s) returned %+v; want it unchanged", tt.first, tt.second, got)
			}
			if again, err := db.ExpireHandoffs(ctx, at.Add(time.Hour)); err != nil || len(again) != 0 {
				t.Errorf("ExpireHandoffs of a final handoff = %+v, %v; want nothing", again, err)
			}
			if read, _ := db.GetHandoff(ctx, h.ID); read.Status != tt.first {
				t.Errorf("stored status %s; want %s", read.Status, tt.first)
			}
		})
	}
	t.Run("pending to pending or timed out by hand", func(t *testing.T) {
		db := openTest(t)
		h := mustHandoff(t, db, "", time.Now().Add(time.Minute))
		for _, to := range []HandoffStatus{HandoffPending, HandoffTimedOut, "later"} {
			if _, err := db.FinishHandoff(context.Background(), h.ID, to, "", time.Now()); !errors.Is(err, errdefs.ErrInvalid) {
				t.Errorf("FinishHandoff(→ %q) = %v; want errdefs.ErrInvalid", to, err)
			}
		}
		if _, err := db.FinishHandoff(context.Background(), "000000000000", HandoffDone, "", time.Now()); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("FinishHandoff(unknown) = %v; want errdefs.ErrNotFound", err)
		}
	})
}

func TestExpireAndCountHandoffs(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	now := time.Now()
	if next, err := db.NextHandoffDeadline(ctx); err != nil || !next.IsZero() {
		t.Fatalf("NextHandoffDeadline with none = %v, %v; want zero", next, err)
	}
	soon := mustHandoff(t, db, "", now.Add(time.Second))
	later := mustHandoff(t, db, "", now.Add(time.Hour))
	answered := mustHandoff(t, db, "", now.Add(time.Millisecond))
	note := "logged in; the code was 123456"
	if h, err := db.FinishHandoff(ctx, answered.ID, HandoffDone, note, now); err != nil || h.Note != note {
		t.Fatalf("FinishHandoff(done) = %+v, %v; want the note kept", h, err)
	}
	if next, err := db.NextHandoffDeadline(ctx); err != nil || !next.Equal(soon.Deadline) {
		t.Fatalf("NextHandoffDeadline = %v, %v; want the pending soonest %v", next, err, soon.Deadline)
	}
	if expired, err := db.ExpireHandoffs(ctx, now); err != nil || len(expired) != 0 {
		t.Fatalf("ExpireHandoffs before any deadline = %+v, %v; want none", expired, err)
	}
	expired, err := db.ExpireHandoffs(ctx, now.Add(time.Minute))
	if err != nil || len(expired) != 1 || expired[0].ID != soon.ID || expired[0].Status != HandoffTimedOut {
		t.Fatalf("ExpireHandoffs a minute on = %+v, %v; want only %s, timed out", expired, err, soon.ID)
	}
	counts, err := db.CountHandoffs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[HandoffStatus]int{HandoffPending: 1, HandoffDone: 1, HandoffTimedOut: 1, HandoffCantHelp: 0, HandoffCancelled: 0}
	for s, n := range want {
		if counts[s] != n {
			t.Errorf("CountHandoffs()[%s] = %d; want %d (all: %v)", s, counts[s], n, counts)
		}
	}
	pending, err := db.ListHandoffs(ctx, HandoffPending)
	if err != nil || len(pending) != 1 || pending[0].ID != later.ID {
		t.Errorf("ListHandoffs(pending) = %+v, %v; want only %s", pending, err, later.ID)
	}
	all, err := db.ListHandoffs(ctx, "")
	if err != nil || len(all) != 3 || all[0].ID != soon.ID || all[2].ID != answered.ID {
		t.Errorf("ListHandoffs(all) = %+v, %v; want the three, oldest first", all, err)
	}
	for task, want := range map[string]int{"0123abcd-task": 1, "4567cdef-task": 0} {
		if n, err := db.PendingHandoffs(ctx, task); err != nil || n != want {
			t.Errorf("PendingHandoffs(%s) = %d, %v; want %d", task, n, err, want)
		}
	}
}
