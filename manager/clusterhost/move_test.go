package clusterhost

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/mux/errdefs"
	"vibebrowser/state"
)

// A store moving away holds its ensures (AwaitMove) and refuses its launches (MayRun's refuseMoving) until
// the move ends; a second move of it meanwhile is refused; other stores are not held.
func TestMoveHoldsTheStoresEnsures(t *testing.T) {
	ch := &Host{host: "host2", moves: map[string]*moving{}}
	shop := state.Store{ID: "s1", Name: "Shop"}
	done, err := ch.beginMove(shop, "host3")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ch.beginMove(shop, "host1"); !errors.Is(err, errdefs.ErrConflict) || !strings.Contains(err.Error(), "moving to host host3 already") {
		t.Errorf("a second move meanwhile = %v; want a conflict naming host3", err)
	}
	if err := ch.refuseMoving(browsers.Spec{Key: "s1", Name: "Shop"}); !errors.Is(err, errdefs.ErrUnavailable) ||
		!strings.Contains(err.Error(), "moving to host host3") {
		t.Errorf("a launch while it moves = %v; want unavailable, naming host3", err)
	}
	if err := ch.refuseMoving(browsers.Spec{Key: "s2"}); err != nil {
		t.Errorf("a launch of another store = %v; want it let through", err)
	}
	if err := ch.AwaitMove(context.Background(), "s2"); err != nil {
		t.Errorf("another store's ensure = %v; want it not held", err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ch.AwaitMove(short, "s1"); !errors.Is(err, errdefs.ErrUnavailable) {
		t.Errorf("an ensure whose caller gives up during the move = %v; want unavailable", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- ch.AwaitMove(context.Background(), "s1") }()
	select {
	case err := <-waited:
		t.Fatalf("an ensure during the move returned (%v) before the move ended", err)
	case <-time.After(100 * time.Millisecond):
	}
	done()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("the held ensure after the move = %v; want it to go on", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held ensure did not go on once the move ended")
	}
	if err := ch.refuseMoving(browsers.Spec{Key: "s1"}); err != nil {
		t.Errorf("a launch after the move = %v; want MayRun's other rules to decide", err)
	}
}

func TestLoginAges(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	got := LoginAges(api.StoreMoved{SnapshotAt: now.Add(-90 * time.Second)}, now)
	if got != "snapshot 1m30s old, no checkpoint" {
		t.Errorf("LoginAges = %q", got)
	}
}
