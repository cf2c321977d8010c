package tasks

import (
	"context"
	"errors"
	"os"
	"os/user"
	"strconv"
	"strings"
	"testing"
)

// anotherUser is a user of this machine other than the test's own and root, for the rule's "named" case.
func anotherUser(t *testing.T) (string, int) {
	t.Helper()
	for _, name := range []string{"nobody", "daemon", "bin"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		if id, _ := strconv.Atoi(u.Uid); id != os.Getuid() && id != 0 {
			return name, id
		}
	}
	t.Skip("this machine has no user nobody, daemon or bin")
	return "", 0
}

// The UI serves the manager's own user, root and VIBE_UI_USERS; never a store's agent or browser user,
// even one VIBE_UI_USERS names, and it says so.
func TestUIUsersAllow(t *testing.T) {
	other, otherID := anotherUser(t)
	own := os.Getuid()
	stores := func(names map[string]string) func(context.Context) (map[string]string, error) {
		return func(context.Context) (map[string]string, error) { return names, nil }
	}
	tests := []struct {
		name  string
		rule  UIUsers
		uid   int
		allow bool
		says  []string
	}{
		{"the manager's own user", UIUsers{own: own, storeUsers: stores(nil)}, own, true, nil},
		{"root", UIUsers{own: own, storeUsers: stores(nil)}, 0, true, nil},
		{"a user VIBE_UI_USERS names", UIUsers{own: own, named: map[int]string{otherID: other}, storeUsers: stores(nil)}, otherID, true, nil},
		{"a user nobody named", UIUsers{own: own, storeUsers: stores(nil)}, otherID, false,
			[]string{other, "uid " + strconv.Itoa(otherID), "serves only the manager's own user", "add it to VIBE_UI_USERS", "(none)"}},
		{"a store's agent user", UIUsers{own: own, storeUsers: stores(map[string]string{other: "store acme's agent user"})}, otherID, false,
			[]string{"store acme's agent user", "never serves a store's agent or browser user"}},
		{"a store's agent user VIBE_UI_USERS names", UIUsers{own: own, named: map[int]string{otherID: other},
			storeUsers: stores(map[string]string{other: "store acme's agent user"})}, otherID, false,
			[]string{"VIBE_UI_USERS names this one, which changes nothing"}},
		{"stores that cannot be read", UIUsers{own: own, storeUsers: func(context.Context) (map[string]string, error) {
			return nil, errors.New("database is locked")
		}}, own, false, []string{"database is locked"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rule.Allow(tt.uid)
			if (err == nil) != tt.allow {
				t.Fatalf("allow(%d) = %v; want allowed %v", tt.uid, err, tt.allow)
			}
			for _, s := range tt.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("allow(%d) = %q; want it to say %q", tt.uid, err, s)
				}
			}
		})
	}
}
