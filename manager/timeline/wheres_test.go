package timeline

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/state"
)

// A store's steps follow its timeline setting as it is now: the desk keeps what it read of the store, and
// reads it again once the store changed (`store set --timeline`), from the next step on.
func TestStepsFollowTheStoreSetting(t *testing.T) {
	home := t.TempDir()
	cfg, err := config.FromEnv(func(k string) string { return map[string]string{"VIBE_HOME": home}[k] })
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx := t.Context()
	d := NewDesk(DeskConfig{Cfg: cfg, DB: db, Fleet: browsers.New(ctx, cfg.Browsers(), db, zerolog.Nop(), browsers.Hooks{}),
		Ctx: ctx, Log: zerolog.Nop(), Root: zerolog.Nop(), Full: func() {}, Cut: func() {}})
	shop, err := db.CreateStore(ctx, state.Store{Name: "Shop", Backend: state.BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	set := func(mode string) {
		t.Helper()
		_, err := db.UpdateStore(ctx, shop.ID, func(s *state.Store) error {
			opts, err := browsers.DecodeOptions(*s)
			if err != nil {
				return err
			}
			opts.Timeline = mode
			s.Config, err = opts.Encode()
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	nav := func(url string) {
		d.Step(shop.ID, task, api.Entry{Client: task, Nav: &api.NavEntry{Tab: "T1", URL: url}})
	}
	nav("https://shop.example/1") // VIBE_TIMELINE's full
	set(api.TimelineOff)
	nav("https://shop.example/2")
	set(api.TimelineMeta)
	nav("https://shop.example/3")

	es, err := d.Entries(context.Background(), task, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		got = append(got, e.Nav.URL)
	}
	if len(got) != 2 || got[0] != "https://shop.example/1" || got[1] != "https://shop.example/3" {
		t.Errorf("steps recorded %q; want the first (full) and the third (meta), not the second (off)", got)
	}
	if w, from, err := d.whereOf(ctx, shop.ID); err != nil || w.Mode != api.TimelineMeta || from != "store" || w.Slug != shop.Slug {
		t.Errorf("whereOf(shop) = %+v from %q, %v; want meta from the store, in its slug's folder", w, from, err)
	}
}
