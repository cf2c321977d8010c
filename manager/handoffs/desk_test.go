package handoffs

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/state"

	"github.com/rs/zerolog"
)

// TestRequestNotedBeforeItsAnswer: a person who answers a handoff the moment it is on the desk (before the
// request's note is out: here a slow one) has the answer noted after the request, never before it, and the
// same for a timeout; the events and the task's timeline tell them in the order they happened.
func TestRequestNotedBeforeItsAnswer(t *testing.T) {
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	var mu sync.Mutex
	var noted []string
	d := New(Config{DB: db, Log: testkit.Log(t), Ctx: ctx,
		Note: func(_ zerolog.Level, kind, _ string, ev api.Event) {
			if kind == api.EventHandoffRequested {
				time.Sleep(300 * time.Millisecond) // the note of the request is slow: the answer comes in meanwhile
			}
			mu.Lock()
			noted = append(noted, kind+" "+ev.Handoff)
			mu.Unlock()
		},
		Renew:    func(context.Context, string, string) error { return nil },
		UILink:   func(string) string { return "" },
		Quitting: func() bool { return false },
		Count:    func(string, string, string) error { return nil },
		QuotaHit: func() {},
		WaitMax:  time.Millisecond, Max: 10,
	})

	// answer answers (or, with timeOut, expires) the first pending handoff as soon as it is on the desk.
	answer := func(timeOut bool) <-chan string {
		done := make(chan string, 1)
		go func() {
			defer close(done)
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
				pending, err := db.ListHandoffs(ctx, state.HandoffPending)
				if err != nil || len(pending) == 0 {
					continue
				}
				if timeOut {
					err = d.expire(ctx) // its wait (WaitMax) ran out a millisecond after it was made
				} else {
					_, err = d.Answer(ctx, pending[0].ID, api.HandoffAnswer{Status: api.HandoffDone})
				}
				if err != nil {
					t.Errorf("answer handoff %s: %v", pending[0].ID, err)
				}
				done <- pending[0].ID
				return
			}
			t.Error("the handoff never reached the desk")
		}()
		return done
	}
	for _, tc := range []struct {
		timeOut bool
		then    string
	}{{false, api.EventHandoffAnswered}, {true, api.EventHandoffTimedOut}} {
		answered := answer(tc.timeOut)
		h, err := d.Create(ctx, api.HandoffRequest{Kind: api.KindWeb, ClientID: "task-a", BUName: "bu", Reason: "solve the captcha"})
		if err != nil {
			t.Fatal(err)
		}
		if id := <-answered; id != h.ID {
			t.Fatalf("answered %s; want %s", id, h.ID)
		}
		mu.Lock()
		got := slices.Clone(noted)
		noted = nil
		mu.Unlock()
		if want := []string{api.EventHandoffRequested + " " + h.ID, tc.then + " " + h.ID}; !slices.Equal(got, want) {
			t.Errorf("noted %q; want %q", got, want)
		}
	}
}
