package state

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"vibebrowser/mux/errdefs"
)

func mustStore(t *testing.T, db *DB, name string) Store {
	t.Helper()
	s, err := db.CreateStore(context.Background(), Store{Name: name, Backend: BackendChrome})
	if err != nil {
		t.Fatalf("CreateStore(%q): %v", name, err)
	}
	return s
}

func TestCreateStoreDefaults(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	before := time.Now()
	s, err := db.CreateStore(ctx, Store{Name: "Shop A", Backend: BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	if !uuid.MatchString(s.ID) || !hex32.MatchString(s.Token) {
		t.Errorf("CreateStore gave id %q, token %q; want a version-4 UUID and a 128-bit hex value", s.ID, s.Token)
	}
	if s.Slug != "shop-a" || string(s.Config) != "{}" || s.ProxyPort != 0 {
		t.Errorf("CreateStore = %+v; want slug shop-a, config {}, no port", s)
	}
	if s.CreatedAt.Before(before.Truncate(time.Second)) || !s.CreatedAt.Equal(s.UpdatedAt) {
		t.Errorf("CreateStore times = %v, %v; want now, equal", s.CreatedAt, s.UpdatedAt)
	}
}

func TestCreateStoreKeepsGivenFields(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	in := Store{
		ID: "abcdef0123456789", Name: "Ziniao One", Slug: "zn1", Backend: BackendZiniao,
		Config:        json.RawMessage(`{"headless":false}`),
		Token:         "tok",
		Ziniao:        ZiniaoAccount{Company: "co", Username: "u", Password: "p"},
		ZiniaoBrowser: "12345",
	}
	got, err := db.CreateStore(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	got.CreatedAt, got.UpdatedAt = time.Time{}, time.Time{}
	if !equalStore(got, in) {
		t.Errorf("CreateStore(%+v) = %+v", in, got)
	}
}

func equalStore(a, b Store) bool {
	ca, cb := string(a.Config), string(b.Config)
	a.Config, b.Config = nil, nil
	return ca == cb && a.ID == b.ID && a.Name == b.Name && a.Slug == b.Slug && a.Backend == b.Backend &&
		a.Token == b.Token && a.ProxyPort == b.ProxyPort && a.Ziniao == b.Ziniao && a.ZiniaoBrowser == b.ZiniaoBrowser &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func TestGetStoreEveryWay(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop A")
	mustStore(t, db, "Other")
	gets := []struct {
		name string
		get  func() (Store, error)
	}{
		{"GetStore", func() (Store, error) { return db.GetStore(ctx, s.ID) }},
		{"GetStoreBySlug", func() (Store, error) { return db.GetStoreBySlug(ctx, "shop-a") }},
		{"GetStoreByName", func() (Store, error) { return db.GetStoreByName(ctx, "Shop A") }},
		{"FindStore id", func() (Store, error) { return db.FindStore(ctx, s.ID) }},
		{"FindStore slug", func() (Store, error) { return db.FindStore(ctx, "shop-a") }},
		{"FindStore name", func() (Store, error) { return db.FindStore(ctx, "Shop A") }},
	}
	for _, g := range gets {
		t.Run(g.name, func(t *testing.T) {
			got, err := g.get()
			if err != nil || !equalStore(got, s) {
				t.Fatalf("%s = %+v, %v; want %+v", g.name, got, err, s)
			}
		})
	}
	misses := []struct {
		name string
		get  func() (Store, error)
	}{
		{"GetStore", func() (Store, error) { return db.GetStore(ctx, "nope") }},
		{"GetStoreBySlug", func() (Store, error) { return db.GetStoreBySlug(ctx, "nope") }},
		{"GetStoreByName", func() (Store, error) { return db.GetStoreByName(ctx, "nope") }},
		{"FindStore", func() (Store, error) { return db.FindStore(ctx, "nope") }},
	}
	for _, g := range misses {
		t.Run(g.name+" missing", func(t *testing.T) {
			if _, err := g.get(); !errors.Is(err, errdefs.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
				t.Fatalf("%s(nope) = %v; want errdefs.ErrNotFound naming it", g.name, err)
			}
		})
	}
}

func TestFindStorePrefersIDThenSlug(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	a := mustStore(t, db, "Alpha")
	// b's slug equals a's id, c's name equals b's slug without being its own slug.
	if _, err := db.CreateStore(ctx, Store{Name: "Beta", Slug: a.ID, Backend: BackendChrome}); err != nil {
		t.Fatal(err)
	}
	c, err := db.CreateStore(ctx, Store{Name: "zeta", Slug: "gamma", Backend: BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.CreateStore(ctx, Store{Name: "gamma!", Slug: "delta", Backend: BackendChrome})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ ref, want string }{{a.ID, a.ID}, {"gamma", c.ID}, {"gamma!", d.ID}, {"zeta", c.ID}}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			got, err := db.FindStore(ctx, tt.ref)
			if err != nil || got.ID != tt.want {
				t.Fatalf("FindStore(%q) = %s, %v; want %s", tt.ref, got.ID, err, tt.want)
			}
		})
	}
}

func TestCreateStoreRefused(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	owner := mustStore(t, db, "Shop A")
	tests := []struct {
		name string
		in   Store
		want error
		// for conflicts
		what, owner, rule string
	}{
		{name: "same name", in: Store{Name: "Shop A", Slug: "other"}, want: errdefs.ErrConflict, what: "name", owner: owner.ID},
		{name: "name reducing to a taken slug", in: Store{Name: "shop a!"}, want: errdefs.ErrConflict, what: "slug", owner: owner.ID},
		{name: "explicit taken slug", in: Store{Name: "B", Slug: "shop-a"}, want: errdefs.ErrConflict, what: "slug", owner: owner.ID},
		{name: "reserved web", in: Store{Name: "Web"}, want: errdefs.ErrConflict, what: "slug", rule: `"web"`},
		{name: "reserved aux", in: Store{Name: "Shop-Aux"}, want: errdefs.ErrConflict, what: "slug", rule: "-aux"},
		{name: "reserved worker", in: Store{Name: "Shop W12"}, want: errdefs.ErrConflict, what: "slug", rule: "-w<digits>"},
		{name: "reserved underscore", in: Store{Name: "_guard"}, want: errdefs.ErrConflict, what: "slug", rule: "'_'"},
		{name: "taken id", in: Store{ID: owner.ID, Name: "New"}, want: errdefs.ErrConflict, what: "id", owner: owner.ID},
		{name: "bad name", in: Store{Name: "a\nb"}, want: errdefs.ErrInvalid},
		{name: "blank name", in: Store{Name: " "}, want: errdefs.ErrInvalid},
		{name: "bad slug", in: Store{Name: "B", Slug: "B B"}, want: errdefs.ErrInvalid},
		{name: "bad backend", in: Store{Name: "B", Backend: "firefox"}, want: errdefs.ErrInvalid},
		{name: "config not JSON", in: Store{Name: "B", Config: json.RawMessage(`{`)}, want: errdefs.ErrInvalid},
		{name: "config not object", in: Store{Name: "B", Config: json.RawMessage(`[1]`)}, want: errdefs.ErrInvalid},
		{name: "config null", in: Store{Name: "B", Config: json.RawMessage(`null`)}, want: errdefs.ErrInvalid},
		{name: "id in reserved namespace", in: Store{ID: "_web", Name: "B"}, want: errdefs.ErrInvalid},
		{name: "id with slash", in: Store{ID: "a/b", Name: "B"}, want: errdefs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in
			if in.Backend == "" {
				in.Backend = BackendChrome
			}
			_, err := db.CreateStore(ctx, in)
			if !errors.Is(err, tt.want) {
				t.Fatalf("CreateStore(%+v) = %v; want %v", in, err, tt.want)
			}
			if tt.want != errdefs.ErrConflict {
				return
			}
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.What != tt.what || ce.Owner != tt.owner || !strings.Contains(ce.Rule, tt.rule) {
				t.Fatalf("CreateStore(%+v) = %#v; want a conflict on %s owned by %q, rule %q", in, err, tt.what, tt.owner, tt.rule)
			}
			if tt.owner != "" && (ce.OwnerName != owner.Name || !strings.Contains(err.Error(), `"Shop A"`)) {
				t.Errorf("CreateStore(%+v) = %q; want the owner store named", in, err)
			}
		})
	}
	if stores, err := db.ListStores(ctx); err != nil || len(stores) != 1 {
		t.Errorf("ListStores after refusals = %d stores, %v; want only the owner", len(stores), err)
	}
}

func TestCJKStoresGetDistinctSlugs(t *testing.T) {
	db := openTest(t)
	a, b := mustStore(t, db, "店铺一"), mustStore(t, db, "店铺二")
	for _, s := range []Store{a, b} {
		if want := "store-" + s.ID[:8]; s.Slug != want {
			t.Errorf("slug of %q = %q; want %q", s.Name, s.Slug, want)
		}
	}
	if a.Slug == b.Slug {
		t.Errorf("two CJK stores share slug %q", a.Slug)
	}
}

func TestUpdateStore(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop A")
	other := mustStore(t, db, "Shop B")

	got, err := db.UpdateStore(ctx, s.ID, func(s *Store) error {
		s.Name = "Shop A2"
		s.Config = json.RawMessage(`{"cdp_url":"http://h:9222"}`)
		s.Backend = BackendCDP
		s.Token = "new-token"
		s.Ziniao = ZiniaoAccount{Company: "c", Username: "u", Password: "p"}
		s.ZiniaoBrowser = "7"
		s.ProxyPort = 1 // ignored: the registry owns ports
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := s
	want.Name, want.Config, want.Backend, want.Token = "Shop A2", json.RawMessage(`{"cdp_url":"http://h:9222"}`), BackendCDP, "new-token"
	want.Ziniao, want.ZiniaoBrowser, want.UpdatedAt = ZiniaoAccount{Company: "c", Username: "u", Password: "p"}, "7", got.UpdatedAt
	if !equalStore(got, want) || got.UpdatedAt.Before(s.UpdatedAt) {
		t.Fatalf("UpdateStore = %+v; want %+v", got, want)
	}
	if read, err := db.GetStore(ctx, s.ID); err != nil || !equalStore(read, got) {
		t.Fatalf("GetStore after update = %+v, %v; want %+v", read, err, got)
	}

	refusals := []struct {
		name string
		fn   func(*Store) error
		want error
	}{
		{"other's name", func(s *Store) error { s.Name = other.Name; return nil }, errdefs.ErrConflict},
		{"other's slug", func(s *Store) error { s.Slug = other.Slug; return nil }, errdefs.ErrConflict},
		{"reserved slug", func(s *Store) error { s.Slug = "web"; return nil }, errdefs.ErrConflict},
		{"bad name", func(s *Store) error { s.Name = ""; return nil }, errdefs.ErrInvalid},
		{"id change", func(s *Store) error { s.ID = "x"; return nil }, errdefs.ErrInvalid},
		{"fn error", func(s *Store) error { s.Name = "Changed"; return errdefs.ErrNotFound }, errdefs.ErrNotFound},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := db.UpdateStore(ctx, s.ID, tt.fn); !errors.Is(err, tt.want) {
				t.Fatalf("UpdateStore = %v; want %v", err, tt.want)
			}
			if read, err := db.GetStore(ctx, s.ID); err != nil || !equalStore(read, got) {
				t.Fatalf("store after a refused update = %+v, %v; want unchanged %+v", read, err, got)
			}
		})
	}
	var ce *ConflictError
	_, err = db.UpdateStore(ctx, s.ID, func(s *Store) error { s.Slug = other.Slug; return nil })
	if !errors.As(err, &ce) || ce.Owner != other.ID {
		t.Errorf("UpdateStore to a taken slug = %v; want a conflict owned by %s", err, other.ID)
	}
	// Keeping its own name and slug is no conflict with itself.
	if _, err := db.UpdateStore(ctx, s.ID, func(*Store) error { return nil }); err != nil {
		t.Errorf("UpdateStore with no change = %v", err)
	}
	if _, err := db.UpdateStore(ctx, "nope", func(*Store) error { return nil }); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("UpdateStore(nope) = %v; want errdefs.ErrNotFound", err)
	}
}

func TestListStores(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	if got, err := db.ListStores(ctx); err != nil || len(got) != 0 {
		t.Fatalf("ListStores on a new database = %v, %v; want none", got, err)
	}
	names := []string{"C", "A", "B"}
	for _, n := range names {
		mustStore(t, db, n)
	}
	if _, err := db.Ports().Allocate(ctx, mustStore(t, db, "D").ID, 9400, func(int) bool { return true }); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListStores(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	for _, s := range got {
		gotNames = append(gotNames, s.Name)
	}
	if strings.Join(gotNames, ",") != "C,A,B,D" {
		t.Errorf("ListStores names = %v; want creation order C,A,B,D", gotNames)
	}
	if got[3].ProxyPort != 9400 {
		t.Errorf("ListStores port of D = %d; want 9400", got[3].ProxyPort)
	}
}

func TestDeleteStoreCascades(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	gone, kept := mustStore(t, db, "Gone"), mustStore(t, db, "Kept")
	free := func(int) bool { return true }
	for _, key := range []string{gone.ID, kept.ID} {
		if _, err := db.Ports().Allocate(ctx, key, 9400, free); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Browsers().UpsertSession(ctx, BrowserSession{Key: key, PID: 10, Status: BrowserRunning}); err != nil {
			t.Fatal(err)
		}
		if err := db.Browsers().ReplaceOwnership(ctx, key, map[string][]string{"c": {"T-" + key}}); err != nil {
			t.Fatal(err)
		}
		if err := db.Browsers().RecordRelaunch(ctx, key, time.Now()); err != nil {
			t.Fatal(err)
		}
		if _, err := db.UpsertTask(ctx, Task{ID: "task-" + key[:8], StoreID: key, Status: TaskRunning}); err != nil {
			t.Fatal(err)
		}
	}
	port, err := db.Ports().Lookup(ctx, gone.ID)
	if err != nil {
		t.Fatal(err)
	}

	if err := db.DeleteStore(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	checkGone := func(key string, wantGone bool) {
		t.Helper()
		_, err := db.GetStore(ctx, key)
		_, errPort := db.Ports().Lookup(ctx, key)
		_, errSess := db.Browsers().GetSession(ctx, key)
		_, errTask := db.GetTask(ctx, "task-"+key[:8])
		own, errOwn := db.Browsers().LoadOwnership(ctx, key)
		n, errRel := db.Browsers().CountRelaunches(ctx, key, time.Time{})
		if errOwn != nil || errRel != nil {
			t.Fatal(errOwn, errRel)
		}
		for what, missing := range map[string]bool{
			"store":      errors.Is(err, errdefs.ErrNotFound),
			"port":       errors.Is(errPort, errdefs.ErrNotFound),
			"session":    errors.Is(errSess, errdefs.ErrNotFound),
			"task":       errors.Is(errTask, errdefs.ErrNotFound),
			"ownership":  len(own) == 0,
			"relaunches": n == 0,
		} {
			if missing != wantGone {
				t.Errorf("%s of %s: gone = %v; want %v", what, key, missing, wantGone)
			}
		}
	}
	checkGone(gone.ID, true)
	checkGone(kept.ID, false)

	// The freed port goes to the next key that asks.
	s := mustStore(t, db, "Next")
	if p, err := db.Ports().Allocate(ctx, s.ID, 9400, free); err != nil || p != port {
		t.Errorf("AllocatePort after delete = %d, %v; want the freed %d", p, err, port)
	}
	if err := db.DeleteStore(ctx, gone.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("DeleteStore twice = %v; want errdefs.ErrNotFound", err)
	}
}
