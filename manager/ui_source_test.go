package manager_test

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"vibebrowser/manager"
	"vibebrowser/manager/api"
	"vibebrowser/manager/config"
)

func TestUIAddrKnob(t *testing.T) {
	tests := []struct{ addr, remote, want string }{
		{"", "", "127.0.0.1:9399"},
		{"off", "", ""},
		{"localhost:9500", "", "localhost:9500"},
		{"[::1]:9500", "", "[::1]:9500"},
		{"127.0.0.1:0", "", "127.0.0.1:0"},
		{"192.168.1.5:9399", "1", "192.168.1.5:9399"},
	}
	for _, tt := range tests {
		t.Run(tt.addr+"/remote="+tt.remote, func(t *testing.T) {
			cfg, err := config.FromEnv(func(k string) string {
				return map[string]string{"VIBE_HOME": t.TempDir(), "VIBE_UI_ADDR": tt.addr, "VIBE_UI_ALLOW_REMOTE": tt.remote}[k]
			})
			if err != nil || cfg.UIAddr != tt.want {
				t.Errorf("FromEnv(VIBE_UI_ADDR=%q) = %+v, %v; want UIAddr %q", tt.addr, cfg, err, tt.want)
			}
		})
	}
}

func TestUIPortInUseRefusesTheStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cfg := daemonConfig(t, map[string]string{"VIBE_UI_ADDR": taken.Addr().String()}, false)
	err = manager.Run(bg, cfg, zerolog.Nop(), "test")
	if err == nil || !strings.Contains(err.Error(), "VIBE_UI_ADDR="+taken.Addr().String()) || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("Run with the UI port taken = %v; want a refusal naming VIBE_UI_ADDR and the port in use", err)
	}
	if _, err := os.Lstat(filepath.Join(cfg.Home, api.SocketRel)); !os.IsNotExist(err) {
		t.Errorf("the refused start left its socket behind (%v)", err)
	}
	// Nothing stays held: the same home starts once the UI is off.
	cfg.UIAddr = ""
	runDaemon(t, cfg)
}

func TestUILoginRoute(t *testing.T) {
	d := startDaemon(t, map[string]string{"VIBE_UI_ADDR": "127.0.0.1:0"}, false)
	if _, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme Shop"}); err != nil {
		t.Fatal(err)
	}
	login, err := d.client.UILogin(bg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(login.URL, "http://127.0.0.1:") || !strings.HasSuffix(login.URL, "/login?code="+login.Code) {
		t.Fatalf("UILogin() = %+v; want a 127.0.0.1 URL that carries the code", login)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Jar: jar}
	resp, err := client.Get(login.URL) // follows the redirect to the session's overview with the cookie it set
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "acme-shop") ||
		!regexp.MustCompile(`^/s/[0-9a-f]{32}/$`).MatchString(resp.Request.URL.Path) {
		t.Errorf("GET login URL = %d at %s; want the overview listing acme-shop, under the session's own path", resp.StatusCode, resp.Request.URL)
	}
	resp, err = client.Get(login.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("second GET of the login URL = %d; want 401", resp.StatusCode)
	}
}

func TestUILoginRouteWithTheUIOff(t *testing.T) {
	d := startDaemon(t, nil, false)
	_, err := d.client.UILogin(bg)
	wantAPIError(t, err, http.StatusServiceUnavailable, "VIBE_UI_ADDR")
}

func TestStatusShowsUptimeAndBudget(t *testing.T) {
	d := startDaemon(t, map[string]string{"VIBE_BROWSER_RELAUNCH_MAX": "4"}, false)
	if _, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme Shop"}); err != nil {
		t.Fatal(err)
	}
	st, err := d.client.Status(bg)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range st.Browsers {
		if b.RelaunchMax != 4 || b.RelaunchesLeft != 4 || !b.StartedAt.IsZero() {
			t.Errorf("browser %s: relaunch %d of %d, started %v; want 4 of 4 and no start time while stopped",
				b.Slug, b.RelaunchesLeft, b.RelaunchMax, b.StartedAt)
		}
	}
}

func TestStoreLoginRouteRefusals(t *testing.T) {
	d := startDaemon(t, map[string]string{"VIBE_UI_ADDR": "127.0.0.1:0"}, false)
	if _, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme Shop"}); err != nil {
		t.Fatal(err)
	}
	_, err := d.client.StoreLogin(bg, "acme-shop", "javascript:alert(1)")
	wantAPIError(t, err, http.StatusBadRequest, "http:// or https://")
	_, err = d.client.StoreLogin(bg, "no-such-store", "")
	wantAPIError(t, err, http.StatusNotFound, "no store named")

	off := startDaemon(t, nil, false)
	_, err = off.client.StoreLogin(bg, "acme-shop", "")
	wantAPIError(t, err, http.StatusServiceUnavailable, "VIBE_UI_ADDR")
}

func TestUIStorePagesThroughTheManager(t *testing.T) {
	d := startDaemon(t, map[string]string{"VIBE_UI_ADDR": "127.0.0.1:0"}, false)
	if _, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme Shop"}); err != nil {
		t.Fatal(err)
	}
	login, err := d.client.UILogin(bg)
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Jar: jar}
	resp, err := client.Get(login.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	base := strings.TrimSuffix(resp.Request.URL.String(), "/") // the session's own pages
	tests := []struct {
		path   string
		status int
		want   string
	}{
		{"/store/acme-shop", http.StatusOK, "The browser is stopped"},
		{"/store/web", http.StatusOK, "The browser is stopped"},
		{"/store/Acme%20Shop", http.StatusNotFound, "No such store"}, // a name is no slug
		{"/store/nope", http.StatusNotFound, "No such store"},
		{"/store/acme-shop/tab/T1", http.StatusConflict, "vibe-browser store start acme-shop"},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", base+tt.path, nil)
		req.Header.Set("Accept", "text/html")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.want) {
			t.Errorf("GET %s = %d; want %d saying %q:\n%s", tt.path, resp.StatusCode, tt.status, tt.want, b)
		}
	}
}
