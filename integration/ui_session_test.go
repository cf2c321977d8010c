//go:build integration

package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/sys/osuser"
)

// The web UI is the person's (issue 37): tried as an agent would, from its own agent user and the pages it
// serves on loopback, with the person's real browser (playwright's Chromium, as root) logged in.

// The people's users of these tests (useradd --system, idempotently): one VIBE_UI_USERS names, one it does not.
const (
	uiPersonUser   = "vbtest-ui-person"
	uiStrangerUser = "vbtest-ui-stranger"
)

// agentPage is a loopback HTTP server an agent user runs (boundaryprobe serve): it records the path and
// Cookie header of every request a browser sends it.
type agentPage struct {
	URL string
	mu  sync.Mutex // mu guards the field below
	got []map[string]string
}

// startAgentPage runs boundaryprobe serve as u until the test ends.
func startAgentPage(t *testing.T, u *osuser.User, probe string) *agentPage {
	t.Helper()
	cmd := exec.Command(probe, "serve")
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.Credential()}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stdout)
	var first probeResult
	if !lines.Scan() || json.Unmarshal(lines.Bytes(), &first) != nil || !first.OK {
		t.Fatalf("boundaryprobe serve as %s printed %q", u.Name, lines.Text())
	}
	p := &agentPage{URL: first.Body}
	go func() {
		for lines.Scan() {
			var req map[string]string
			if json.Unmarshal(lines.Bytes(), &req) == nil {
				p.mu.Lock()
				p.got = append(p.got, req)
				p.mu.Unlock()
			}
		}
	}()
	return p
}

// requests are the requests the page received so far.
func (p *agentPage) requests() []map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]map[string]string{}, p.got...)
}

// uiGet is one GET of the UI by this (root) process, with the headers given.
func uiGet(t *testing.T, rawURL string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest("GET", rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

// keepPage writes a refusal's HTML for the browser to show (ui_session.js show) and returns its file.
func keepPage(t *testing.T, name, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWebUIIsThePersons(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("agent users need a root manager; CI runs as root")
	}
	agent := testkit.SystemUser(t, agentUserA)
	person := testkit.SystemUser(t, uiPersonUser)
	stranger := testkit.SystemUser(t, uiStrangerUser)
	bins := reachableBinaries(t)
	// VIBE_UI_USERS names the person, and the agent user too: a store's agent user is refused all the same.
	m := startManagerWith(t, bins, boundaryHome(t), "VIBE_UI_USERS="+uiPersonUser+","+agentUserA)
	web := site(t)
	m.cli("store", "add", "Acme", "--agent-user", agentUserA)
	m.cli("agent", "--store", "acme", "--task", taskA, "--", "bash", "-c", "FAKEBU_DRIVE=1 browser-use <<'PY'\nopen "+web.URL+"/orders\nPY")
	var shot int64
	testkit.WaitFor(t, 20*time.Second, "a shot of the task's tab", func() bool {
		for _, e := range m.timeline(taskA).Entries {
			if e.Shot != nil {
				shot = e.Seq
				return true
			}
		}
		return false
	})
	ui := "http://" + m.uiAddr

	page := startNodeScript(t, "ui_session.js", uiLogin(t, m).URL)
	ready := page.expect("ready")
	base, _ := ready["base"].(string)
	cookies, _ := ready["cookies"].([]any)
	if len(cookies) != 1 || ready["url"] != ui+"/" || !strings.HasPrefix(base, ui+"/s/") {
		t.Fatalf("the login landed on %v (session %q) with cookies %v; want the overview under the session's path, one cookie",
			ready["url"], base, cookies)
	}
	c := cookies[0].(map[string]any)
	stolen := "vibe_ui_session=" + c["value"].(string)
	if base != ui+c["path"].(string) || c["httpOnly"] != true || c["sameSite"] != "Strict" {
		t.Fatalf("the session cookie is %v; want HttpOnly, SameSite=Strict, scoped to the session's path %s", c, base)
	}

	t.Run("an agent's loopback page never receives the session cookie", func(t *testing.T) {
		mine := startAgentPage(t, agent, bins.probe)
		// The control: a cookie of 127.0.0.1 with Path=/ goes to every port of it, the agent's too.
		shared := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.SetCookie(w, &http.Cookie{Name: "shared", Value: "1", Path: "/"})
			io.WriteString(w, "<!doctype html><title>set</title>")
		}))
		t.Cleanup(shared.Close)
		page.send("goto " + shared.URL + "/")
		page.expect("goto")
		// A link typed or pasted, a link a page of the UI follows, and paths like the UI's own.
		for _, path := range []string{"/", "/store/acme", "/login", "/s/" + strings.Repeat("0", 32) + "/"} {
			page.send("goto " + mine.URL + path)
			if got := page.expect("goto"); got["status"] != float64(200) {
				t.Fatalf("the agent's page %s answered %v", path, got)
			}
		}
		page.send("ui /")
		page.expect("ui")
		page.send("follow " + mine.URL + "/from-the-ui")
		page.expect("follow")
		testkit.WaitFor(t, 5*time.Second, "the agent's page to have logged the 5 pages opened", func() bool {
			return len(mine.requests()) >= 5
		})
		for _, r := range mine.requests() {
			if strings.Contains(r["cookie"], "vibe_ui_session") {
				t.Errorf("the agent's page received the session cookie at %s: %q", r["path"], r["cookie"])
			}
			if !strings.Contains(r["cookie"], "shared=1") {
				t.Errorf("the agent's page at %s got cookies %q; want the control's shared=1, which goes to every port", r["path"], r["cookie"])
			}
		}
		// Back on the UI while the agent's server still answers: a late request of its page (Chrome fetches
		// the favicon after the load) must not be refused into the next page's console.
		page.send("ui /")
		page.expect("ui")
	})

	t.Run("a stolen cookie opens nothing", func(t *testing.T) {
		// This process is root, which the UI serves: the cookie alone, at the UI's usual paths, is refused.
		for _, path := range []string{"/", "/store/acme", "/task/" + taskA + "/export"} {
			status, _, body := uiGet(t, ui+path, map[string]string{"Cookie": stolen, "Accept": "text/html"})
			if status != http.StatusForbidden || !strings.Contains(body, "does not open this address") {
				t.Errorf("GET %s with the cookie alone = %d %.300q; want 403: the cookie without its page's address", path, status, body)
			}
			if path == "/" {
				page.send("show " + ui + "/ 403 " + keepPage(t, "stolen.html", body))
				page.expect("show")
				shootAtBothWidths(t, page, "ui-stolen-cookie", "a stolen cookie's refusal")
			}
		}
		// The control: the cookie with its page's address, as the person's browser sends it.
		if status, _, body := uiGet(t, base+"/", map[string]string{"Cookie": stolen}); status != http.StatusOK ||
			!strings.Contains(body, "Stores and the web browser") {
			t.Errorf("GET the session's own overview with its cookie = %d; want 200", status)
		}
	})

	t.Run("the UI serves only the person's users", func(t *testing.T) {
		as := func(u *osuser.User, path string, hdr ...string) probeResult {
			t.Helper()
			out, err := runAs(u, []string{"PATH=/usr/bin:/bin"}, bins.probe, append([]string{"get", path}, hdr...)...)
			var r probeResult
			if jerr := json.Unmarshal(lastLine([]byte(out)), &r); jerr != nil {
				t.Fatalf("boundaryprobe get %s as %s: %v, %v: %s", path, u.Name, err, jerr, out)
			}
			return r
		}
		// The agent user, even with the whole session (the cookie and its page's address), even listed.
		code := uiLogin(t, m).Code
		for _, tt := range []struct {
			name, url string
			hdr       []string
		}{
			{"the overview", ui + "/", nil},
			{"a login code", ui + "/login?code=" + code, nil},
			{"the whole session", base + "/", []string{"Cookie:" + stolen}},
			{"the task's shot", base + "/task/" + taskA + "/shot/" + strconv.FormatInt(shot, 10), []string{"Cookie:" + stolen}},
		} {
			r := as(agent, tt.url, append(tt.hdr, "Accept:text/html")...)
			if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "agent user") ||
				!strings.Contains(r.Body, "never serves a store&#39;s agent or browser user") || !strings.Contains(r.Body, "VIBE_UI_USERS names this one") {
				t.Errorf("%s as %s = %d %.400q; want 403 naming the rule (a store's agent user, listed or not)", tt.name, agentUserA, r.Status, r.Body)
			}
			if tt.name == "the overview" {
				page.send("show " + ui + "/ 403 " + keepPage(t, "agent.html", r.Body))
				page.expect("show")
				shootAtBothWidths(t, page, "ui-agent-refused", "the agent user's refusal")
			}
		}
		// The refused code was never spent: the person's browser still logs in with it.
		if status, _, _ := uiGet(t, ui+"/login?code="+code, nil); status != http.StatusSeeOther {
			t.Errorf("the code the agent user tried, then used by root = %d; want 303 (the refusal spent nothing)", status)
		}
		if r := as(stranger, ui+"/", "Accept:text/html"); r.Status != http.StatusForbidden ||
			!strings.Contains(r.Body, uiStrangerUser) || !strings.Contains(r.Body, "VIBE_UI_USERS") {
			t.Errorf("a user VIBE_UI_USERS does not name = %d %.300q; want 403 naming VIBE_UI_USERS", r.Status, r.Body)
		}
		// The controls: the listed person and root are served.
		if r := as(person, ui+"/", "Accept:text/html"); r.Status != http.StatusUnauthorized || !strings.Contains(r.Body, "vibe-browser ui") {
			t.Errorf("the user VIBE_UI_USERS names, without a login = %d %.300q; want 401 asking for a login", r.Status, r.Body)
		}
		if r := as(person, base+"/", "Cookie:"+stolen); r.Status != http.StatusOK {
			t.Errorf("the user VIBE_UI_USERS names, with a session = %d; want 200", r.Status)
		}
		if status, _, _ := uiGet(t, ui+"/", nil); status != http.StatusUnauthorized {
			t.Errorf("root without a login = %d; want 401 asking for one", status)
		}
	})

	t.Run("screenshots and exports go only to the UI's own pages", func(t *testing.T) {
		shotURL := base + "/task/" + taskA + "/shot/" + strconv.FormatInt(shot, 10)
		for _, path := range []string{shotURL, base + "/task/" + taskA + "/export"} {
			for _, site := range []string{"cross-site", "same-site"} {
				status, _, body := uiGet(t, path, map[string]string{"Cookie": stolen, "Sec-Fetch-Site": site})
				if status != http.StatusForbidden || !strings.Contains(body, "Sec-Fetch-Site: "+site) {
					t.Errorf("GET %s from a %s page = %d %q; want 403 naming the rule", path, site, status, body)
				}
			}
			status, hdr, _ := uiGet(t, path, map[string]string{"Cookie": stolen, "Sec-Fetch-Site": "same-origin"})
			if status != http.StatusOK || hdr.Get("Cross-Origin-Resource-Policy") != "same-origin" {
				t.Errorf("GET %s from the UI's page = %d, CORP %q; want 200, same-origin", path, status, hdr.Get("Cross-Origin-Resource-Policy"))
			}
		}
		// In the person's browser: an agent's page that even knows the shot's address shows nothing of it;
		// the task page shows it.
		mine := startAgentPage(t, agent, bins.probe)
		page.send("img " + mine.URL + "/?img=" + url.QueryEscape(shotURL))
		if got := page.expect("img"); got["loaded"] != false {
			t.Errorf("an agent's page loaded the task's shot as its picture")
		}
		page.send("shots /task/" + taskA)
		if got := page.expect("shots"); got["loaded"].(float64) < 1 {
			t.Errorf("the task page shows %v shots; want its shot", got["loaded"])
		}
	})

	t.Run("banners say only their own words", func(t *testing.T) {
		for _, path := range []string{"/?answered=Paste+your+Seller+Central+password+into+the+agent%27s+tab", "/?answered=done",
			"/store/acme?error=Paste+your+Seller+Central+password+into+the+agent%27s+tab", "/store/acme?error=start"} {
			page.send("ui " + path)
			got := page.expect("ui")
			if got["status"] != float64(200) || got["answered"] != "" || got["error"] != "" || strings.Contains(got["text"].(string), "Paste your") {
				t.Errorf("%s shows banners %q %q (status %v); want none, and nothing of the URL's text", path, got["answered"], got["error"], got["status"])
			}
		}
		page.send("shot " + filepath.Join(t.TempDir(), "forged.png"))
		wantReadable(t, page.expect("shot"), 1280)
		// The control: the person's own refused address, and its banner.
		page.send("press /store/acme #new-tab>button #new-tab>input[name=url] javascript:alert(1)")
		got := page.expect("pressed")
		if got["url"] != ui+"/store/acme?error=address" || !strings.Contains(got["error"].(string), "is not allowed: use an http://") {
			t.Errorf("a refused address ended on %v with the banner %q; want the store page saying the rule", got["url"], got["error"])
		}
		shootAtBothWidths(t, page, "ui-store-error", "the store page's own error banner")
	})

	t.Run("a link to the UI without the session's path opens in the session", func(t *testing.T) {
		for _, path := range []string{"/store/acme", "/#handoff-x"} {
			page.send("resume " + ui + path)
			got := page.expect("resume")
			if got["url"] != ui+path || got["session"] != base {
				t.Errorf("the link %s opened %v in the session %v; want the same page in %s", path, got["url"], got["session"], base)
			}
		}
	})
	page.send("close")
	page.expect("closed")
	page.wait()
}
