package tasks

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"vibebrowser/integration/testkit"
)

func TestUIUsersAllow(t *testing.T) {
	other, otherID := testkit.OtherUser(t)
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
