package state

import (
	"context"
	"errors"
	"testing"
	"time"

	"vibebrowser/mux/errdefs"
)

func equalSession(a, b BrowserSession) bool {
	return a.Key == b.Key && a.PID == b.PID && a.PIDStartTime.Equal(b.PIDStartTime) && a.CDPEndpoint == b.CDPEndpoint &&
		a.Status == b.Status && a.Adopted == b.Adopted && a.StartedAt.Equal(b.StartedAt) && a.StoppedAt.Equal(b.StoppedAt)
}

func TestBrowserSessions(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	start := time.Unix(1700000000, 123456789)

	first := BrowserSession{Key: s.ID, PID: 4242, PIDStartTime: start.Add(-time.Second),
		CDPEndpoint: "ws://127.0.0.1:40000/devtools/browser/x", Status: BrowserRunning, StartedAt: start}
	got, err := db.Browsers().UpsertSession(ctx, first)
	if err != nil || !equalSession(got, first) || got.UpdatedAt.IsZero() {
		t.Fatalf("UpsertBrowserSession(%+v) = %+v, %v", first, got, err)
	}

	second := BrowserSession{Key: s.ID, PID: 5151, PIDStartTime: start.Add(time.Hour),
		CDPEndpoint: "ws://127.0.0.1:40001/devtools/browser/y", Status: BrowserRunning, Adopted: true, StartedAt: start.Add(time.Hour)}
	if got, err = db.Browsers().UpsertSession(ctx, second); err != nil || !equalSession(got, second) {
		t.Fatalf("UpsertBrowserSession over an earlier record = %+v, %v; want %+v", got, err, second)
	}

	web := BrowserSession{Key: webKey, Status: BrowserStopped}
	if _, err := db.Browsers().UpsertSession(ctx, web); err != nil {
		t.Fatalf("UpsertBrowserSession(web) = %v", err)
	}

	stoppedAt := start.Add(2 * time.Hour)
	if err := db.Browsers().MarkStopped(ctx, s.ID, stoppedAt); err != nil {
		t.Fatal(err)
	}
	want := second
	want.Status, want.StoppedAt = BrowserStopped, stoppedAt
	if got, err := db.Browsers().GetSession(ctx, s.ID); err != nil || !equalSession(got, want) {
		t.Fatalf("GetBrowserSession after MarkBrowserStopped = %+v, %v; want %+v", got, err, want)
	}

	list, err := db.Browsers().ListSessions(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListBrowserSessions = %+v, %v; want two", list, err)
	}
	byKey := map[string]BrowserSession{list[0].Key: list[0], list[1].Key: list[1]}
	if !equalSession(byKey[s.ID], want) || !equalSession(byKey[webKey], web) {
		t.Fatalf("ListBrowserSessions = %+v; want %+v and %+v", list, want, web)
	}

	refusals := []struct {
		name string
		err  error
		want error
	}{
		{"unknown key", func() error {
			_, err := db.Browsers().UpsertSession(ctx, BrowserSession{Key: "nope", Status: BrowserRunning})
			return err
		}(), errdefs.ErrNotFound},
		{"bad status", func() error {
			_, err := db.Browsers().UpsertSession(ctx, BrowserSession{Key: s.ID, Status: "zombie"})
			return err
		}(), errdefs.ErrInvalid},
		{"negative pid", func() error {
			_, err := db.Browsers().UpsertSession(ctx, BrowserSession{Key: s.ID, PID: -1, Status: BrowserRunning})
			return err
		}(), errdefs.ErrInvalid},
		{"stop unknown", db.Browsers().MarkStopped(ctx, "nope", stoppedAt), errdefs.ErrNotFound},
		{"get unknown", func() error { _, err := db.Browsers().GetSession(ctx, "nope"); return err }(), errdefs.ErrNotFound},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if !errors.Is(tt.err, tt.want) {
				t.Fatalf("got %v; want %v", tt.err, tt.want)
			}
		})
	}
	if got, err := db.Browsers().GetSession(ctx, s.ID); err != nil || !equalSession(got, want) {
		t.Fatalf("session after refused writes = %+v, %v; want %+v", got, err, want)
	}
}
