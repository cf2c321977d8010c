package state

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"vibebrowser/mux/errdefs"
)

func TestOwnership(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")

	if got, err := db.Browsers().LoadOwnership(ctx, s.ID); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("LoadOwnership with nothing saved = %#v, %v; want an empty map", got, err)
	}
	first := map[string][]string{"task-1": {"T3", "T1", "T2"}, "manual": {"T9"}, "idle": {}}
	if err := db.Browsers().ReplaceOwnership(ctx, s.ID, first); err != nil {
		t.Fatal(err)
	}
	webOwners := map[string][]string{"manual": {"W1"}}
	if err := db.Browsers().ReplaceOwnership(ctx, webKey, webOwners); err != nil {
		t.Fatal(err)
	}
	// Order within a client is kept; a client with no targets has nothing to restore.
	want := map[string][]string{"task-1": {"T3", "T1", "T2"}, "manual": {"T9"}}
	if got, err := db.Browsers().LoadOwnership(ctx, s.ID); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("LoadOwnership = %v, %v; want %v", got, err, want)
	}

	second := map[string][]string{"task-2": {"T1"}}
	if err := db.Browsers().ReplaceOwnership(ctx, s.ID, second); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Browsers().LoadOwnership(ctx, s.ID); err != nil || fmt.Sprint(got) != fmt.Sprint(second) {
		t.Fatalf("LoadOwnership after replace = %v, %v; want %v", got, err, second)
	}
	if got, err := db.Browsers().LoadOwnership(ctx, webKey); err != nil || fmt.Sprint(got) != fmt.Sprint(webOwners) {
		t.Fatalf("LoadOwnership(web) = %v, %v; want it untouched by the store's replace: %v", got, err, webOwners)
	}

	refusals := []struct {
		name   string
		key    string
		owners map[string][]string
		want   error
	}{
		{"target under two clients", s.ID, map[string][]string{"a": {"T1"}, "b": {"T1"}}, errdefs.ErrInvalid},
		{"empty client", s.ID, map[string][]string{"": {"T1"}}, errdefs.ErrInvalid},
		{"empty target", s.ID, map[string][]string{"a": {""}}, errdefs.ErrInvalid},
		{"unknown key", "nope", map[string][]string{"a": {"T1"}}, errdefs.ErrNotFound},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if err := db.Browsers().ReplaceOwnership(ctx, tt.key, tt.owners); !errors.Is(err, tt.want) {
				t.Fatalf("ReplaceOwnership(%q, %v) = %v; want %v", tt.key, tt.owners, err, tt.want)
			}
		})
	}
	if got, err := db.Browsers().LoadOwnership(ctx, s.ID); err != nil || fmt.Sprint(got) != fmt.Sprint(second) {
		t.Fatalf("LoadOwnership after refusals = %v, %v; want %v", got, err, second)
	}

	if err := db.Browsers().ReplaceOwnership(ctx, s.ID, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := db.Browsers().LoadOwnership(ctx, s.ID); err != nil || len(got) != 0 {
		t.Fatalf("LoadOwnership after clearing = %v, %v; want empty", got, err)
	}
}

func TestRelaunches(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	t0 := time.Unix(1700000000, 0)
	for i := range 3 {
		if err := db.Browsers().RecordRelaunch(ctx, s.ID, t0.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Browsers().RecordRelaunch(ctx, webKey, t0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		key   string
		since time.Time
		want  int
	}{
		{s.ID, time.Time{}, 3},
		{s.ID, t0, 3},
		{s.ID, t0.Add(time.Nanosecond), 2},
		{s.ID, t0.Add(2 * time.Minute), 1},
		{s.ID, t0.Add(time.Hour), 0},
		{webKey, t0, 1},
		{"nope", time.Time{}, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s since %v", tt.key, tt.since.Unix()), func(t *testing.T) {
			if n, err := db.Browsers().CountRelaunches(ctx, tt.key, tt.since); err != nil || n != tt.want {
				t.Fatalf("CountRelaunches(%q, %v) = %d, %v; want %d", tt.key, tt.since, n, err, tt.want)
			}
		})
	}
	if err := db.Browsers().ClearRelaunches(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if n, err := db.Browsers().CountRelaunches(ctx, s.ID, time.Time{}); err != nil || n != 0 {
		t.Errorf("CountRelaunches after clear = %d, %v; want 0", n, err)
	}
	if n, err := db.Browsers().CountRelaunches(ctx, webKey, time.Time{}); err != nil || n != 1 {
		t.Errorf("CountRelaunches(web) after clearing the store = %d, %v; want 1", n, err)
	}
	if err := db.Browsers().RecordRelaunch(ctx, "nope", t0); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("RecordRelaunch(nope) = %v; want errdefs.ErrNotFound", err)
	}
}

func TestSettings(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	if _, err := db.GetSetting(ctx, "k"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("GetSetting(missing) = %v; want errdefs.ErrNotFound", err)
	}
	for _, v := range []string{"v1", "", "v3 with\nnewline"} {
		if err := db.SetSetting(ctx, "k", v); err != nil {
			t.Fatal(err)
		}
		if got, err := db.GetSetting(ctx, "k"); err != nil || got != v {
			t.Fatalf("GetSetting(k) = %q, %v; want %q", got, err, v)
		}
	}
	if err := db.SetSetting(ctx, "", "v"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("SetSetting with an empty key = %v; want errdefs.ErrInvalid", err)
	}
}

func TestConflictErrorMessages(t *testing.T) {
	tests := []struct {
		err  *ConflictError
		want string
	}{
		{&ConflictError{What: "slug", Value: "shop", Owner: "abc", OwnerName: "Shop"}, `slug "shop" is taken by store "Shop" (id abc)`},
		{&ConflictError{What: "id", Value: "abc", Owner: "abc"}, `id "abc" is taken by abc`},
		{&ConflictError{What: "slug", Value: "web", Rule: "r"}, `slug "web" is reserved: r`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q; want %q", got, tt.want)
			}
			if !errors.Is(fmt.Errorf("wrapped: %w", tt.err), errdefs.ErrConflict) {
				t.Errorf("errors.Is(%v, errdefs.ErrConflict) = false", tt.err)
			}
		})
	}
}

func TestWebTokenIsGeneratedOnceAndKept(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	const n = 8
	got := make(chan string, n)
	for range n {
		go func() {
			tok, err := db.WebToken(ctx)
			if err != nil {
				t.Error(err)
			}
			got <- tok
		}()
	}
	first := <-got
	for range n - 1 {
		if tok := <-got; tok != first {
			t.Fatalf("concurrent first WebToken calls = %q and %q; want one token", first, tok)
		}
	}
	if len(first) != 32 {
		t.Errorf("WebToken = %q; want 128 bits in hex", first)
	}
	if again, err := db.WebToken(ctx); err != nil || again != first {
		t.Errorf("WebToken again = %q, %v; want %q", again, err, first)
	}
}
