package manager_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"

	"vibebrowser/manager/api"
	"vibebrowser/state"
)

// The API's update paths (PATCH a store, PUT a task) change what they are given and keep everything else:
// a partial update never erases a field it was not given.

func TestStorePatchKeepsWhatItWasNotGiven(t *testing.T) {
	d := startDaemon(t, nil, true)
	c := d.client
	yes, no := true, false
	chrome, err := c.CreateStore(bg, api.StoreSpec{Name: "Headless Shop", StoreSettings: api.StoreSettings{Headless: &yes}})
	if err != nil {
		t.Fatal(err)
	}
	remote, err := c.CreateStore(bg, api.StoreSpec{Name: "Remote", Backend: "cdp", StoreSettings: api.StoreSettings{CDPURL: "http://10.0.0.7:9222"}})
	if err != nil {
		t.Fatal(err)
	}
	zin, err := c.CreateStore(bg, api.StoreSpec{Name: "Zin", Backend: "ziniao",
		Ziniao: &api.ZiniaoSpec{Browser: "7", Company: "co", Username: "me", Password: "pw", Port: 17000}})
	if err != nil {
		t.Fatal(err)
	}
	name := func(s string) *string { return &s }
	tests := []struct {
		name   string
		ref    string
		update api.StoreUpdate
		want   func(before api.Store) api.Store
	}{
		{"rename keeps headless", chrome.ID, api.StoreUpdate{Name: name("Renamed Shop")},
			func(b api.Store) api.Store { b.Name = "Renamed Shop"; return b }},
		{"headless keeps the name", chrome.ID, api.StoreUpdate{StoreChanges: api.StoreChanges{Headless: &no}},
			func(b api.Store) api.Store { b.Headless = &no; return b }},
		{"nothing changes nothing", chrome.ID, api.StoreUpdate{}, func(b api.Store) api.Store { return b }},
		{"rename keeps the cdp url", remote.ID, api.StoreUpdate{Name: name("Remote 2")},
			func(b api.Store) api.Store { b.Name = "Remote 2"; return b }},
		{"cdp url keeps the name", remote.ID, api.StoreUpdate{StoreChanges: api.StoreChanges{CDPURL: name("ws://10.0.0.8:9222/devtools/browser/x")}},
			func(b api.Store) api.Store { b.CDPURL = "ws://10.0.0.8:9222/devtools/browser/x"; return b }},
		{"rename keeps the ziniao environment and account", zin.ID, api.StoreUpdate{Name: name("Zin 2")},
			func(b api.Store) api.Store { b.Name = "Zin 2"; return b }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, err := c.GetStore(bg, tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.UpdateStore(bg, tt.ref, tt.update)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want(before)
			if b, w := mustJSON(t, got), mustJSON(t, want); b != w {
				t.Errorf("UpdateStore(%s, %s) = %s; want %s", tt.ref, mustJSON(t, tt.update), b, w)
			}
			if read, err := c.GetStore(bg, tt.ref); err != nil || mustJSON(t, read) != mustJSON(t, want) {
				t.Errorf("GetStore after the update = %s, %v; want %s", mustJSON(t, read), err, mustJSON(t, want))
			}
		})
	}
	// What the view does not show: the account's password and the client's port stay in state.
	db, err := state.OpenReadOnly(filepath.Join(d.home, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := db.GetStore(bg, zin.ID)
	if err != nil {
		t.Fatal(err)
	}
	var config struct {
		ZiniaoPort int `json:"ziniao_port"`
	}
	if json.Unmarshal(s.Config, &config) != nil || config.ZiniaoPort != 17000 || s.Ziniao.Password != "pw" || s.Token == "" {
		t.Errorf("ziniao store in state after a rename: config %s, account %+v; want port 17000 and the password kept", s.Config, s.Ziniao)
	}
	// A field of another backend is refused, not stored.
	err = c.Do(bg, http.MethodPatch, api.PathStores+"/"+chrome.ID, map[string]any{"cdp_url": "http://x:1"}, nil)
	wantAPIError(t, err, http.StatusBadRequest, "only for the cdp backend")
}

func TestTaskPutKeepsItsStore(t *testing.T) {
	d := startDaemon(t, nil, true)
	c := d.client
	s, err := c.CreateStore(bg, api.StoreSpec{Name: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	const id = "a1b2c3d4-0000-4000-8000-000000000002"
	if _, err := c.PutTask(bg, id, api.TaskUpdate{Store: "shop", Status: "queued"}); err != nil {
		t.Fatal(err)
	}
	for _, status := range []string{"running", "waiting", "completed"} {
		got, err := c.PutTask(bg, id, api.TaskUpdate{Status: status})
		if err != nil || got.Store != s.ID || got.Status != status {
			t.Errorf("PutTask(%s, status %s only) = %+v, %v; want store %s kept", id, status, got, err, s.ID)
		}
	}
	if got, err := c.GetTask(bg, id); err != nil || got.Store != s.ID {
		t.Errorf("GetTask = %+v, %v; want store %s", got, err, s.ID)
	}
	// A body that leaves out the status is refused, not taken as an empty status.
	err = c.Do(bg, http.MethodPut, api.PathTasks+"/"+id, map[string]any{"store": "shop"}, nil)
	wantAPIError(t, err, http.StatusBadRequest, "task status")
	if got, err := c.GetTask(bg, id); err != nil || got.Status != "completed" || got.Store != s.ID {
		t.Errorf("GetTask after a refused PUT = %+v, %v; want it unchanged", got, err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
