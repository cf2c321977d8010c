package state

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"vibebrowser/mux/errdefs"
)

func TestBrowserVersions(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	if _, err := db.Browsers().Version(ctx, s.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Fatalf("BrowserVersion of a browser never seen = %v; want errdefs.ErrNotFound", err)
	}
	for _, v := range []string{`{"Browser":"Chrome/140"}`, `{"Browser":"Chrome/141","Protocol-Version":"1.3"}`} {
		if err := db.Browsers().SaveVersion(ctx, s.ID, json.RawMessage(v)); err != nil {
			t.Fatalf("SaveBrowserVersion(%s) = %v", v, err)
		}
		if got, err := db.Browsers().Version(ctx, s.ID); err != nil || string(got) != v {
			t.Fatalf("BrowserVersion after saving %s = %s, %v; want it back", v, got, err)
		}
	}
	if err := db.Browsers().SaveVersion(ctx, webKey, json.RawMessage(`{"Browser":"Chrome/141"}`)); err != nil {
		t.Fatalf("SaveBrowserVersion(web) = %v", err)
	}

	refusals := []struct {
		name string
		key  string
		v    string
		want error
	}{
		{name: "not JSON", key: s.ID, v: `{"Browser":`, want: errdefs.ErrInvalid},
		{name: "not an object", key: s.ID, v: `["Chrome"]`, want: errdefs.ErrInvalid},
		{name: "unknown key", key: "no-such-store", v: `{}`, want: errdefs.ErrNotFound},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			if err := db.Browsers().SaveVersion(ctx, tt.key, json.RawMessage(tt.v)); !errors.Is(err, tt.want) {
				t.Fatalf("SaveBrowserVersion(%q, %s) = %v; want %v", tt.key, tt.v, err, tt.want)
			}
		})
	}

	if err := db.DeleteStore(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Browsers().Version(ctx, s.ID); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("BrowserVersion of a removed store = %v; want errdefs.ErrNotFound", err)
	}
	if _, err := db.Browsers().Version(ctx, webKey); err != nil {
		t.Errorf("BrowserVersion(web) after removing a store = %v; want it kept", err)
	}
}
