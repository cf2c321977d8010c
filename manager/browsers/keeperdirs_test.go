package browsers

import (
	"os"
	"path/filepath"
	"testing"

	"vibebrowser/manager/keeper"
	"vibebrowser/mux/sys/osuser"
	"vibebrowser/state"
)

func TestKeeperDirOf(t *testing.T) {
	c := &Config{Home: "/h"}
	tests := []struct {
		name     string
		endpoint string
		want     string // "" = refused
	}{
		{"run", "unix:" + keeper.SocketPath("/h/run", "k1"), "/h/run"},
		{"a browser user's", "unix:" + keeper.SocketPath("/h/run/keepers/vibe-browser", "k1"), "/h/run/keepers/vibe-browser"},
		{"unclean path", "unix:/h/run/keepers/../keepers/u/keep-k1.sock", "/h/run/keepers/u"},
		{"another key's socket", "unix:" + keeper.SocketPath("/h/run", "k2"), ""},
		{"another home", "unix:" + keeper.SocketPath("/other/run", "k1"), ""},
		{"deeper than a user's folder", "unix:" + keeper.SocketPath("/h/run/keepers/u/x", "k1"), ""},
		{"run/keepers itself", "unix:" + keeper.SocketPath("/h/run/keepers", "k1"), ""},
		{"a port", "http://127.0.0.1:9222", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.keeperDirOf(tt.endpoint, "k1")
			if (tt.want == "") != (err != nil) || got != tt.want {
				t.Errorf("keeperDirOf(%q) = %q, %v; want %q", tt.endpoint, got, err, tt.want)
			}
		})
	}
}

func TestKeeperDirFor(t *testing.T) {
	c := &Config{Home: "/h"}
	tests := []struct {
		name string
		user *osuser.User
		want string // "" = refused
	}{
		{"the manager's own", nil, "/h/run"},
		{"a browser user", &osuser.User{Name: "vibe-browser"}, "/h/run/keepers/vibe-browser"},
		{"dot dot", &osuser.User{Name: ".."}, ""},
		{"a slash", &osuser.User{Name: "a/b"}, ""},
		{"empty", &osuser.User{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.keeperDirFor(tt.user)
			if (tt.want == "") != (err != nil) || got != tt.want {
				t.Errorf("keeperDirFor(%+v) = %q, %v; want %q", tt.user, got, err, tt.want)
			}
		})
	}
}

// pipeHandle is a handle whose endpoint is a keeper's socket.
type pipeHandle struct {
	fakeHandle
	endpoint string
	adopted  bool
}

func (h *pipeHandle) Endpoint() string { return h.endpoint }
func (h *pipeHandle) Adopted() bool    { return h.adopted }

func TestBrowserUser(t *testing.T) {
	f := &Fleet{cfg: Config{Home: "/h"}}
	me, err := osuser.Lookup("root")
	if err != nil {
		t.Skip("no root user to look up")
	}
	configured := &osuser.User{Name: "vibe-browser", UID: 4242}
	chromeSpec, ziniaoSpec := Spec{Backend: state.BackendChrome}, Spec{Backend: state.BackendZiniao}
	tests := []struct {
		name  string
		sp    Spec
		h     handle
		users Users
		want  string // the user's name; "" = nil
	}{
		{"the manager's keeper", chromeSpec, &pipeHandle{endpoint: "unix:/h/run/keep-k.sock"}, Users{Browser: configured}, ""},
		{"the configured user's keeper", chromeSpec, &pipeHandle{endpoint: "unix:/h/run/keepers/vibe-browser/keep-k.sock"}, Users{Browser: configured}, "vibe-browser"},
		{"an earlier setting's user", chromeSpec, &pipeHandle{endpoint: "unix:/h/run/keepers/root/keep-k.sock", adopted: true}, Users{}, me.Name},
		{"launched on a port", chromeSpec, &pipeHandle{endpoint: "http://127.0.0.1:9"}, Users{Browser: configured}, "vibe-browser"},
		{"adopted on a port", chromeSpec, &pipeHandle{endpoint: "http://127.0.0.1:9", adopted: true}, Users{Browser: configured}, ""},
		{"someone else's browser", ziniaoSpec, &pipeHandle{endpoint: "http://127.0.0.1:9"}, Users{Browser: configured}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := f.cfg.browserUser(tt.sp, tt.h, tt.users)
			got := ""
			if u != nil {
				got = u.Name
			}
			if err != nil || got != tt.want {
				t.Errorf("browserUser(%s) = %q, %v; want %q", tt.h.Endpoint(), got, err, tt.want)
			}
		})
	}
}

// TestLayOutBrowser: the folders on the way to a browser user's keeper folder, profile and downloads are
// enterable, run/keepers/ is the manager's 0711, and the keeper's folder is named for the user.
func TestLayOutBrowser(t *testing.T) {
	home := t.TempDir()
	os.Chmod(home, 0o700)
	c := &Config{Home: home}
	sp := Spec{Slug: "shop"}
	for _, d := range []string{"run", "profiles/shop", "downloads/shop"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := c.layOutBrowser(sp, &osuser.User{Name: "vibe-browser"})
	if err != nil || dir != filepath.Join(home, "run", "keepers", "vibe-browser") {
		t.Fatalf("layOutBrowser = %q, %v; want run/keepers/vibe-browser", dir, err)
	}
	for path, want := range map[string]os.FileMode{"": 0o711, "run": 0o711, "run/keepers": 0o711, "profiles": 0o711,
		"downloads": 0o711, "downloads/shop": 0o711, "profiles/shop": 0o700} {
		if fi, err := os.Stat(filepath.Join(home, path)); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%q: mode %v, %v; want %04o", path, fi.Mode().Perm(), err, want)
		}
	}
	if dirs := c.KeeperDirs(); len(dirs) != 1 {
		t.Errorf("keeperDirs before any keeper folder = %q; want run/ alone", dirs)
	}
	os.Mkdir(dir, 0o700)
	os.Symlink("/etc", filepath.Join(home, "run", "keepers", "planted"))
	if dirs := c.KeeperDirs(); len(dirs) != 2 || dirs[1] != dir {
		t.Errorf("keeperDirs = %q; want run/ and %s (no symlink)", dirs, dir)
	}

	// A run/keepers/ of another's is refused, not used.
	if os.Geteuid() == 0 {
		os.Chown(filepath.Join(home, "run", "keepers"), 4242, 4242)
		if _, err := c.layOutBrowser(sp, &osuser.User{Name: "vibe-browser"}); err == nil {
			t.Error("layOutBrowser with run/keepers/ of another uid succeeded; want it refused")
		}
	}
}
