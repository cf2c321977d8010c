package manager_test

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"vibebrowser/manager/api"
	"vibebrowser/manager/browsers"
	"vibebrowser/state"
)

// TestStoreNetworkIdentity: a chrome store's proxy, time zone and language are checked, kept whole in state
// and shown only redacted; "none" clears one; other backends refuse them.
func TestStoreNetworkIdentity(t *testing.T) {
	d := startDaemon(t, nil, true)
	const pw = "s3cret-pw"
	s, err := d.client.CreateStore(bg, api.StoreSpec{
		Name:          "Berlin",
		StoreSettings: api.StoreSettings{Proxy: "socks5://anna:" + pw + "@proxy.example:1080", Timezone: "Europe/Berlin", Lang: "de-de"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Proxy != "socks5://anna:***@proxy.example:1080" || s.Timezone != "Europe/Berlin" || s.Lang != "de-DE" {
		t.Errorf("created = proxy %q, zone %q, lang %q; want it redacted, the zone, de-DE", s.Proxy, s.Timezone, s.Lang)
	}
	db, err := state.OpenReadOnly(filepath.Join(d.home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := db.GetStore(bg, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if opts, _ := browsers.DecodeOptions(st); opts.Proxy != "socks5://anna:"+pw+"@proxy.example:1080" {
		t.Errorf("state keeps proxy %q; want the whole URL", opts.Proxy)
	}
	for _, tc := range []struct {
		name string
		u    api.StoreUpdate
		want string
	}{
		{"bad scheme", api.StoreUpdate{StoreChanges: api.StoreChanges{Proxy: ptr("ftp://h:1")}}, "not supported"},
		{"no port", api.StoreUpdate{StoreChanges: api.StoreChanges{Proxy: ptr("http://u:" + pw + "@h")}}, "needs a port"},
		{"bad zone", api.StoreUpdate{StoreChanges: api.StoreChanges{Timezone: ptr("Mars/Base")}}, "Europe/Berlin"},
		{"bad lang", api.StoreUpdate{StoreChanges: api.StoreChanges{Lang: ptr("deutsch!")}}, "BCP 47"},
	} {
		_, err := d.client.UpdateStore(bg, s.ID, tc.u)
		wantAPIError(t, err, http.StatusBadRequest, tc.want)
		if err != nil && strings.Contains(err.Error(), pw) {
			t.Errorf("%s: the refusal %q shows the password", tc.name, err)
		}
	}
	u, err := d.client.UpdateStore(bg, s.ID, api.StoreUpdate{StoreChanges: api.StoreChanges{Proxy: ptr(api.NoIdentity), Lang: ptr("pt-BR")}})
	if err != nil || u.Proxy != "" || u.Timezone != "Europe/Berlin" || u.Lang != "pt-BR" {
		t.Errorf("update = %+v, %v; want no proxy, the zone kept, pt-BR", u, err)
	}
	_, err = d.client.CreateStore(bg, api.StoreSpec{Name: "Remote", Backend: "cdp", StoreSettings: api.StoreSettings{CDPURL: "http://127.0.0.1:1", Timezone: "UTC"}})
	wantAPIError(t, err, http.StatusBadRequest, "for chrome stores")
}

func ptr[T any](v T) *T { return &v }
