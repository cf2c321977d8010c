package manager_test

import (
	"net/http"
	"os"
	"testing"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
)

// A store's users are checked when set: they exist, are not root, are two users, and need a root manager.
func TestStoreUsersAreChecked(t *testing.T) {
	d := startDaemon(t, nil, true)
	if os.Geteuid() != 0 {
		_, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme", StoreSettings: api.StoreSettings{AgentUser: "nobody"}})
		wantAPIError(t, err, http.StatusBadRequest, "need the manager to run as root")
		return
	}
	testkit.SystemUser(t, "vbtest-agent-a")
	tests := []struct {
		name          string
		agent, browse string
		want          string
	}{
		{"missing user", "vbtest-no-such-user", "", `no user "vbtest-no-such-user" on this machine: create it with`},
		{"root", "root", "", "is root (uid 0)"},
		{"one user for both", "vbtest-agent-a", "vbtest-agent-a", "both vbtest-agent-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme " + tt.name, StoreSettings: api.StoreSettings{AgentUser: tt.agent, BrowserUser: tt.browse}})
			wantAPIError(t, err, http.StatusBadRequest, tt.want)
		})
	}
	none := "none"
	s, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Plain"})
	if err != nil {
		t.Fatal(err)
	}
	if s, err = d.client.UpdateStore(bg, s.Slug, api.StoreUpdate{StoreChanges: api.StoreChanges{AgentUser: &none}}); err != nil || s.AgentUser != "" {
		t.Errorf("store set --agent-user none: %+v, %v; want no agent user", s, err)
	}
}
