//go:build integration

package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/forward/fakeproxy"
	"vibebrowser/mux/sys/osuser"
)

// cliIn is cli with stdin, for a secret a command reads there.
func (m *managed) cliIn(stdin string, args ...string) string {
	m.t.Helper()
	cmd := exec.Command(m.bins.vibe, append([]string{"--home", m.home}, args...)...)
	cmd.Env = m.env
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		m.t.Fatalf("vibe-browser %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// identitySite reports the host a request named, so a page shows which name reached it.
func identitySite(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ip" { // a what-is-my-IP service, as VIBE_PROXY_CHECK_URL names one
			fmt.Fprint(w, "198.51.100.7\n")
			return
		}
		fmt.Fprintf(w, "<!doctype html><title>shop</title><p id=host>%s</p>", r.Host)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type pageIdentity struct {
	Host     string   `json:"host"`
	Body     string   `json:"body"`
	TimeZone string   `json:"tz"`
	Lang     string   `json:"lang"`
	Langs    []string `json:"langs"`
}

// loadThrough opens url in a new tab of the store as client and reads what the page sees of its identity.
func loadThrough(t *testing.T, m *managed, slug, client, url string) pageIdentity {
	t.Helper()
	id, _ := loadThroughTab(t, m, slug, client, url)
	return id
}

// loadThroughTab is loadThrough, with the tab's target id.
func loadThroughTab(t *testing.T, m *managed, slug, client, url string) (pageIdentity, string) {
	t.Helper()
	c := dialRaw(t, m.storeWS(slug, client))
	target, session := c.createPage(url)
	v, err := c.evaluate(session, `({host: (document.getElementById("host") || {}).textContent || "", body: document.body.innerText,
		tz: Intl.DateTimeFormat().resolvedOptions().timeZone, lang: navigator.language, langs: navigator.languages})`)
	if err != nil {
		t.Fatal(err)
	}
	var id pageIdentity
	if err := json.Unmarshal(v, &id); err != nil {
		t.Fatalf("%s: %v", v, err)
	}
	return id, target
}

// TestStoresGoOutThroughTheirOwnProxies: two stores behind two upstream proxies (HTTP with Basic auth,
// SOCKS5 with user/password), each resolving a name only it knows, load the site through their own proxy
// with their own credentials, in their own time zone and language; wrong credentials give the error page;
// a manager kill -9 and restart leaves the forwarder in place; no password is in any argv, log, answer or
// wrapper config (SPEC §16). Under a root manager each proxied store's browser runs as a browser user the
// manager made for it, and its forwarder serves that user only: not root, not the other store's (SPEC §20).
func TestStoresGoOutThroughTheirOwnProxies(t *testing.T) {
	t.Parallel()
	site := identitySite(t)
	port := site.URL[strings.LastIndex(site.URL, ":")+1:]
	// The browsers' users must reach the binaries (the keeper is vibe-browser keep).
	m := startManagerWith(t, reachableBinaries(t), settledTempDir(t), "VIBE_BROWSER_IDLE_S=0", "VIBE_PROXY_CHECK_URL=http://ip.test:"+port+"/ip")
	const pwA, pwB = "pw-anna-7d1f", "pw-ben-93c2"
	httpUp := fakeproxy.StartHTTP(t, "anna", pwA, map[string]string{"shop-a.test": "127.0.0.1", "ip.test": "127.0.0.1"})
	socksUp := fakeproxy.StartSOCKS5(t, "ben", pwB, map[string]string{"shop-b.test": "127.0.0.1", "ip.test": "127.0.0.1"})
	m.cliIn("http://anna:"+pwA+"@"+httpUp.Addr+"\n", "store", "add", "Tokyo", "--proxy", "-",
		"--timezone", "Asia/Tokyo", "--lang", "ja-JP")
	m.cliIn("socks5://ben:"+pwB+"@"+socksUp.Addr+"\n", "store", "add", "Recife", "--proxy", "-",
		"--timezone", "America/Recife", "--lang", "pt-BR")
	m.cliIn("http://anna:wrong-"+pwA+"@"+httpUp.Addr+"\n", "store", "add", "Locked", "--proxy", "-")

	a := loadThrough(t, m, "tokyo", "probe", "http://shop-a.test:"+port+"/")
	if a.Host != "shop-a.test:"+port || a.TimeZone != "Asia/Tokyo" || a.Lang != "ja-JP" {
		t.Errorf("store Tokyo's page = %+v; want shop-a.test through its proxy, Asia/Tokyo, ja-JP", a)
	}
	b := loadThrough(t, m, "recife", "probe", "http://shop-b.test:"+port+"/")
	if b.Host != "shop-b.test:"+port || b.TimeZone != "America/Recife" || !slices.Contains(b.Langs, "pt-BR") {
		t.Errorf("store Recife's page = %+v; want shop-b.test through its SOCKS5 proxy, America/Recife, pt-BR", b)
	}
	if got := httpUp.Targets(); !slices.Contains(got, "shop-a.test:"+port) || slices.Contains(got, "shop-b.test:"+port) {
		t.Errorf("the HTTP proxy was asked for %q; want store Tokyo's site and never store Recife's", got)
	}
	if got := socksUp.Targets(); !slices.Contains(got, "shop-b.test:"+port) || slices.Contains(got, "shop-a.test:"+port) {
		t.Errorf("the SOCKS5 proxy was asked for %q; want store Recife's site and never store Tokyo's", got)
	}
	locked, lockedTab := loadThroughTab(t, m, "locked", "probe", "http://shop-a.test:"+port+"/")
	if !strings.Contains(locked.Body, "refused the store's credentials") || !strings.Contains(locked.Body, "Locked") ||
		!strings.Contains(locked.Body, httpUp.Addr) || strings.Contains(locked.Body, pwA) {
		t.Errorf("store Locked's page = %q; want the forwarder's page naming the store, the proxy and the refusal", locked.Body)
	}

	// What a person sees: the store's page says its proxy fails and what to do; a working one says how it goes out.
	page := startNodeScript(t, "ui_pages.js", uiLogin(t, m).URL)
	page.expect("ready")
	page.send("store /store/locked " + lockedTab + " 255,255,255")
	got := page.expect("store")
	if e, _ := got["error"].(string); !strings.Contains(e, "proxy http://anna:***@"+httpUp.Addr+" fails") ||
		!strings.Contains(e, "refused the store's credentials") || !strings.Contains(e, "store set locked --proxy") || strings.Contains(e, pwA) {
		t.Errorf("store Locked's page says %q; want its proxy's failure, redacted, with the fix", e)
	}
	shootAtBothWidths(t, page, "store-proxy-failing", "store page of a store whose proxy refuses its credentials")
	if st := m.cli("status"); !strings.Contains(st, "store locked: its proxy http://anna:***@"+httpUp.Addr+" fails") {
		t.Errorf("status says %q; want store Locked's proxy failure", st)
	}

	r := doctorCLI(t, m, nil)
	wantDoctorFails(t, r, "proxy:locked", "refused the store's credentials", httpUp.Addr, "store set locked --proxy")
	for _, slug := range []string{"tokyo", "recife"} {
		if line := r.line("proxy:" + slug); !strings.HasPrefix(line, "OK") {
			t.Errorf("doctor's proxy:%s line = %q; want OK", slug, line)
		}
	}
	if strings.Contains(r.out, pwA) || strings.Contains(r.out, pwB) {
		t.Errorf("doctor's report shows a proxy password:\n%s", r.out)
	}
	forwarders := map[string]string{} // slug → its forwarder's address
	for _, slug := range []string{"tokyo", "recife"} {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", m.browserOf(slug).PID))
		_, fwd, _ := bytes.Cut(cmdline, []byte("--proxy-server=http://"))
		fwd, _, _ = bytes.Cut(fwd, []byte{0})
		if !bytes.Contains(cmdline, []byte("--force-webrtc-ip-handling-policy=disable_non_proxied_udp")) ||
			!bytes.HasPrefix(fwd, []byte("127.0.0.1:")) {
			t.Errorf("store %s's Chromium runs %q; want its forwarder as proxy and WebRTC only through it", slug, cmdline)
		}
		forwarders[slug] = string(fwd)
	}
	if os.Geteuid() == 0 {
		ownForwarders(t, m, forwarders, "http://shop-a.test:"+port+"/")
	}
	var show struct {
		Proxy  string
		ExitIP string `json:"exit_ip"`
	}
	json.Unmarshal([]byte(m.cli("store", "show", "tokyo", "--json")), &show)
	if show.Proxy != "http://anna:***@"+httpUp.Addr {
		t.Errorf("store show's proxy = %q; want it redacted", show.Proxy)
	}
	for _, slug := range []string{"tokyo", "recife"} { // ip.test only the proxies resolve: each check went through its own
		testkit.WaitFor(t, 20*time.Second, "store "+slug+"'s exit IP through its proxy", func() bool {
			json.Unmarshal([]byte(m.cli("store", "show", slug, "--json")), &show)
			return show.ExitIP == "198.51.100.7"
		})
	}

	// kill -9 of the manager: the keeper and its forwarder stay, the next manager adopts them.
	pid := m.browserOf("tokyo").PID
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	m.cmd.Wait()
	m.start()
	again := loadThrough(t, m, "tokyo", "after-restart", "http://shop-a.test:"+port+"/again")
	if again.Host != "shop-a.test:"+port || m.browserOf("tokyo").PID != pid {
		t.Errorf("after a manager restart store Tokyo loads %+v (pid %d → %d); want its adopted browser through its forwarder",
			again, pid, m.browserOf("tokyo").PID)
	}

	// No password anywhere a person or another process reads.
	seen := map[string]string{"manager log": m.log.String(), "store list": m.cli("store", "list", "--json"),
		"status": m.cli("status", "--json")}
	for _, slug := range []string{"tokyo", "recife", "locked"} {
		seen["store show "+slug] = m.cli("store", "show", slug, "--json")
	}
	files, _ := filepath.Glob(filepath.Join(m.home, "run", "*"))
	more, _ := filepath.Glob(filepath.Join(m.home, "bin", "*", "*.json"))
	for _, f := range append(files, more...) {
		if b, err := os.ReadFile(f); err == nil {
			seen[f] = string(b)
		}
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range procs {
		if b, err := os.ReadFile(f); err == nil {
			seen[f] = string(b)
		}
	}
	for where, text := range seen {
		for _, pw := range []string{pwA, pwB} {
			if strings.Contains(text, pw) {
				t.Errorf("%s holds a proxy password", where)
			}
		}
	}
}

// ownForwarders checks, under a root manager, that each proxied store's browser runs as the browser user the
// manager made for it (vibe-b-<slug>) and that its forwarder serves that user only: a request through Tokyo's
// forwarder from its own browser user reaches the site, from root or from Recife's browser user it is closed
// unanswered (SPEC §16, §20).
func ownForwarders(t *testing.T, m *managed, forwarders map[string]string, url string) {
	t.Helper()
	users := map[string]*osuser.User{}
	for _, slug := range []string{"tokyo", "recife"} {
		u, err := osuser.Lookup("vibe-b-" + slug)
		if err != nil {
			t.Fatalf("store %s's browser user: %v; want the manager to have made vibe-b-%s", slug, err, slug)
		}
		if uid := procUID(t, m.browserOf(slug).PID); uid != u.UID {
			t.Errorf("store %s's Chromium runs as uid %d; want its own browser user %s (%d)", slug, uid, u.Name, u.UID)
		}
		users[slug] = u
	}
	curl := func(u *osuser.User) error {
		args := []string{"-sS", "--max-time", "20", "-o", "/dev/null", "-x", "http://" + forwarders["tokyo"], url}
		if u == nil {
			return exec.Command("curl", args...).Run()
		}
		_, err := runAs(u, []string{"PATH=/usr/bin:/bin"}, "curl", args...)
		return err
	}
	if err := curl(users["tokyo"]); err != nil {
		t.Errorf("Tokyo's browser user through Tokyo's forwarder: %v; want the site", err)
	}
	for who, u := range map[string]*osuser.User{"root": nil, "Recife's browser user": users["recife"]} {
		if err := curl(u); err == nil {
			t.Errorf("%s through Tokyo's forwarder reached the site; want the connection closed", who)
		}
	}
}
