package chrome

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/sys/osuser"
)

func TestBrowserEnv(t *testing.T) {
	manager := []string{"PATH=/usr/bin:/bin", "HOME=/root", "USER=root", "LANG=C.UTF-8", "LC_TIME=de_DE.UTF-8",
		"TZ=UTC", "DISPLAY=:0", "XAUTHORITY=/root/.Xauthority", "FONTCONFIG_FILE=/etc/fonts/fonts.conf",
		"CHROME_LOG_FILE=/tmp/c.log", "XDG_RUNTIME_DIR=/run/user/0", "http_proxy=http://u:p@corp:3128",
		"VIBE_ZINIAO_PASSWORD=secret", "VIBE_SNAPSHOT_KEY=k", "VIBE_HOME=/srv/vibe", "FOO_API_KEY=sk-1",
		"GOOGLE_API_KEY=g", "CHROMIUM_FLAGS=--remote-debugging-port=9222", "AWS_SECRET_ACCESS_KEY=a", "TERM=xterm"}
	u := &osuser.User{Name: "vb", UID: 4242, GID: 4242}
	tests := []struct {
		name string
		o    Options
		want []string
	}{
		{name: "the manager's user",
			want: []string{"PATH=/usr/bin:/bin", "HOME=/root", "USER=root", "LANG=C.UTF-8", "LC_TIME=de_DE.UTF-8", "TZ=UTC",
				"DISPLAY=:0", "XAUTHORITY=/root/.Xauthority", "FONTCONFIG_FILE=/etc/fonts/fonts.conf",
				"CHROME_LOG_FILE=/tmp/c.log", "XDG_RUNTIME_DIR=/run/user/0", "http_proxy=http://u:p@corp:3128"}},
		{name: "a store with a proxy and a time zone",
			o: Options{Identity: Identity{Proxy: "socks5://u:p@px:1080", Timezone: "Asia/Tokyo"}},
			want: []string{"PATH=/usr/bin:/bin", "HOME=/root", "USER=root", "LANG=C.UTF-8", "LC_TIME=de_DE.UTF-8",
				"DISPLAY=:0", "XAUTHORITY=/root/.Xauthority", "FONTCONFIG_FILE=/etc/fonts/fonts.conf",
				"CHROME_LOG_FILE=/tmp/c.log", "XDG_RUNTIME_DIR=/run/user/0", "TZ=Asia/Tokyo"}},
		{name: "a browser user",
			o: Options{User: u, ProfileDir: "/h/profiles/s"},
			want: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "LC_TIME=de_DE.UTF-8", "TZ=UTC", "DISPLAY=:0",
				"XAUTHORITY=/root/.Xauthority", "FONTCONFIG_FILE=/etc/fonts/fonts.conf", "CHROME_LOG_FILE=/tmp/c.log",
				"http_proxy=http://u:p@corp:3128", "HOME=/h/profiles/s/.home", "USER=vb", "LOGNAME=vb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := browserEnv(manager, tt.o); !slices.Equal(got, tt.want) {
				t.Errorf("browserEnv(%+v) = %q; want %q", tt.o, got, tt.want)
			}
		})
	}
}

// TestLaunchEnvHoldsNoSecret: with secrets in the manager's environment, neither the keeper nor Chromium
// (here a script that writes its own environment and its parent's, then never gets ready) has one, on the
// pipe and on a port.
func TestLaunchEnvHoldsNoSecret(t *testing.T) {
	t.Setenv("VIBE_ZINIAO_PASSWORD", "secret")
	t.Setenv("FOO_API_KEY", "sk-secret")
	t.Setenv("LANG", "C.UTF-8")
	for _, transport := range []Transport{TransportPipe, TransportPort} {
		t.Run(string(transport), func(t *testing.T) {
			dir := t.TempDir()
			bin := writeScript(t, `tr '\0' '\n' < /proc/$PPID/environ > '`+dir+`/parent.env'
env > '`+dir+`/browser.env'
exec sleep 1000
`)
			o := Options{Transport: TransportPort, Binary: bin, ProfileDir: filepath.Join(dir, "p"),
				ReadyTimeout: 2 * time.Second, Attempts: 1, Log: testkit.Log(t)}
			envs := []string{"browser.env"}
			if transport == TransportPipe {
				o = keptOptions(t, o)
				envs = append(envs, "parent.env") // the keeper is the browser's parent
			}
			var le *LaunchError
			if _, err := Launch(context.Background(), o); !errors.As(err, &le) {
				t.Fatalf("Launch(never ready) = %v; want a LaunchError", err)
			}
			for _, name := range envs {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil {
					t.Fatalf("the browser wrote no %s: %v", name, err)
				}
				env := strings.Split(string(b), "\n")
				for _, secret := range []string{"VIBE_ZINIAO_PASSWORD=secret", "FOO_API_KEY=sk-secret"} {
					if slices.Contains(env, secret) {
						t.Errorf("%s holds the manager's %s", name, secret)
					}
				}
				if !slices.Contains(env, "LANG=C.UTF-8") || !slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") }) {
					t.Errorf("%s = %q; want the manager's LANG and PATH", name, env)
				}
			}
		})
	}
}
