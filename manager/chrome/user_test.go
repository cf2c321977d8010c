package chrome

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"vibebrowser/mux/sys/osuser"
)

func TestUserEnv(t *testing.T) {
	u := &osuser.User{Name: "vb", UID: 4242, GID: 4242}
	tests := []struct {
		name string
		base []string
		want []string
	}{
		{name: "root's folders dropped",
			base: []string{"HOME=/root", "USER=root", "LOGNAME=root", "XDG_RUNTIME_DIR=/run/user/0", "XDG_CONFIG_HOME=/root/.config",
				"TMPDIR=/root/tmp", "DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/0/bus", "PWD=/root"},
			want: []string{"HOME=/p/.home", "USER=vb", "LOGNAME=vb"}},
		{name: "the rest kept",
			base: []string{"PATH=/usr/bin:/bin", "TZ=Europe/Berlin", "DISPLAY=:0", "LANG=C.UTF-8", "HOMEWARD=x"},
			want: []string{"PATH=/usr/bin:/bin", "TZ=Europe/Berlin", "DISPLAY=:0", "LANG=C.UTF-8", "HOMEWARD=x", "HOME=/p/.home", "USER=vb", "LOGNAME=vb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := userEnv(tt.base, u, "/p/.home"); !slices.Equal(got, tt.want) {
				t.Errorf("userEnv(%q) = %q; want %q", tt.base, got, tt.want)
			}
		})
	}
}

// TestOwnProfile: a profile whose top folder is someone else's is given over whole, its symlinks changed
// themselves and never followed; a file hard-linked from outside is refused.
func TestOwnProfile(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files to another uid needs root")
	}
	const uid, gid = 4242, 4243
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.WriteFile(outside, []byte("root's"), 0o600); err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(t.TempDir(), "profile")
	for _, d := range []string{"Default/Cache", "Local Storage"} {
		if err := os.MkdirAll(filepath.Join(profile, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(profile, "Default", "Cookies"), []byte("c"), 0o600)
	if err := os.Symlink(outside, filepath.Join(profile, "Default", "escape")); err != nil {
		t.Fatal(err)
	}
	if err := ownProfile(profile, owner{uid, gid}); err != nil {
		t.Fatalf("ownProfile = %v", err)
	}
	for _, p := range []string{"", "Default", "Default/Cache", "Default/Cookies", "Default/escape", "Local Storage"} {
		fi, err := os.Lstat(filepath.Join(profile, p))
		if st := fi.Sys().(*syscall.Stat_t); err != nil || st.Uid != uid || st.Gid != gid {
			t.Errorf("%q is %d:%d, %v; want %d:%d", p, st.Uid, st.Gid, err, uid, gid)
		}
	}
	if fi, _ := os.Stat(profile); fi.Mode().Perm() != 0o700 {
		t.Errorf("profile mode %04o; want 0700", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(outside); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("the file a symlink in the profile names was given away")
	}

	// Already the user's: nothing is walked (a root file inside stays root's).
	os.WriteFile(filepath.Join(profile, "new"), []byte("n"), 0o600)
	if err := ownProfile(profile, owner{uid, gid}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(filepath.Join(profile, "new")); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("a profile already its user's was walked again")
	}

	// Given to another user, a hard link to a file outside is refused, and that file stays root's.
	if err := os.Link(outside, filepath.Join(profile, "Default", "linked")); err != nil {
		t.Fatal(err)
	}
	err := ownProfile(profile, owner{uid + 1, gid})
	if err == nil || !strings.Contains(err.Error(), "hard links") {
		t.Errorf("ownProfile with a hard link inside = %v; want it refused", err)
	}
	if fi, _ := os.Stat(outside); fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Error("a file hard-linked into the profile was given away")
	}
}

// TestOwnDirRefusesSymlink: a folder the manager gives away is never reached through a symlink.
func TestOwnDirRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.Mkdir(target, 0o755)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := ownDir(link, owner{os.Geteuid(), os.Getegid()}); err == nil {
		t.Error("ownDir through a symlink succeeded; want it refused")
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o755 {
		t.Errorf("the symlink's target was changed to %04o", fi.Mode().Perm())
	}
}

// TestReadIn: the manager's reads in a profile stay in it, wait on no FIFO and are bounded.
func TestReadIn(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("secret"), 0o600)
	profile := t.TempDir()
	os.WriteFile(filepath.Join(profile, "ok"), []byte("9222\n/devtools/browser/x"), 0o600)
	os.WriteFile(filepath.Join(profile, "big"), make([]byte, 100), 0o600)
	os.Symlink(outside, filepath.Join(profile, "escape"))
	os.Symlink("ok", filepath.Join(profile, "inside"))
	if err := syscall.Mkfifo(filepath.Join(profile, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(profile)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	tests := []struct {
		name    string
		wantErr bool
	}{{"ok", false}, {"inside", false}, {"escape", true}, {"fifo", true}, {"big", true}, {"missing", true}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := readIn(root, tt.name, 64)
			if (err != nil) != tt.wantErr {
				t.Errorf("readIn(%q) = %q, %v; want error %v", tt.name, b, err, tt.wantErr)
			}
		})
	}
	if _, err := readIn(root, "big", 64); !errors.Is(err, errTooLarge) {
		t.Errorf("readIn(big) = %v; want errTooLarge", err)
	}
	if _, _, err := readDevToolsActivePort(profile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("readDevToolsActivePort without the file = %v; want not found", err)
	}
}

// TestPrepareProfileStaysInside: a Default or Preferences that a profile's user made a symlink out of the
// profile is neither read nor written through.
func TestPrepareProfileStaysInside(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "Preferences")
	os.WriteFile(secret, []byte(`{"secret":"root's"}`), 0o600)
	for _, plant := range []string{"Default", "Default/Preferences"} {
		t.Run(plant, func(t *testing.T) {
			profile := t.TempDir()
			target := outside
			if plant != "Default" {
				os.Mkdir(filepath.Join(profile, "Default"), 0o700)
				target = secret
			}
			if err := os.Symlink(target, filepath.Join(profile, plant)); err != nil {
				t.Fatal(err)
			}
			_, err := prepareProfile(profile, nil)
			if plant == "Default" && err == nil {
				t.Error("prepareProfile through a Default symlinked out of the profile succeeded; want it refused")
			}
			if plant != "Default" {
				if err != nil {
					t.Errorf("prepareProfile with a symlinked Preferences = %v; want it moved aside", err)
				}
				if fi, err := os.Lstat(filepath.Join(profile, plant)); err != nil || !fi.Mode().IsRegular() {
					t.Errorf("Preferences after prepareProfile: %v, %v; want a regular file of its own", fi, err)
				}
				if b, _ := os.ReadFile(filepath.Join(profile, plant)); strings.Contains(string(b), "secret") {
					t.Errorf("the file outside was read into the profile: %s", b)
				}
			}
			if b, _ := os.ReadFile(secret); string(b) != `{"secret":"root's"}` {
				t.Errorf("the file outside was written: %s", b)
			}
		})
	}
}

// TestKeeperUsers: a browser user's keeper folder (in a folder of root's) names that user's processes only;
// a folder of the home's own names its owner's and the manager's.
func TestKeeperUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("folders of another uid need root")
	}
	const u = 4242
	base := t.TempDir()
	mk := func(path string, uid int) string {
		t.Helper()
		p := filepath.Join(base, path)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, uid, uid); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mk("keepers", 0)
	mk("home", u)
	tests := []struct {
		name string
		dir  string
		want []int
	}{
		{"root's run", mk("run", 0), []int{0}},
		{"a browser user's folder", mk("keepers/vb", u), []int{u}},
		{"an operator's home's run", mk("home/run", u), []int{u, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := keeperUsers(tt.dir); err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("keeperUsers(%s) = %v, %v; want %v", tt.dir, got, err, tt.want)
			}
		})
	}
}
