//go:build integration

package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
)

// loginSite is a marketplace's login: /login answers with an HttpOnly login cookie (sid, persistent) and a
// session cookie (cart), as a site's login answer sets them, each with the value of ?v=; /whoami shows the
// cookies the browser sent.
func loginSite(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/login":
			v := r.URL.Query().Get("v")
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "sid-" + v, Path: "/", MaxAge: 86400, HttpOnly: true})
			http.SetCookie(w, &http.Cookie{Name: "cart", Value: "cart-" + v, Path: "/"})
			fmt.Fprint(w, "<!doctype html><title>logged in</title>welcome")
		case "/whoami":
			fmt.Fprintf(w, "<!doctype html><title>whoami</title><pre id=c>%s</pre>", r.Header.Get("Cookie"))
		default:
			fmt.Fprint(w, "<!doctype html><title>shop</title>")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func randomValue(t *testing.T) string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// login logs client c in on the site with value v (its login answer sets the cookies) and sets a
// partitioned cookie part=part-v through CDP, as a client may.
func login(t *testing.T, c *rawCDP, site, v string) {
	t.Helper()
	_, s := c.createPage(site + "/login?v=" + v)
	c.must("Network.setCookie", map[string]any{"name": "part", "value": "part-" + v, "url": "https://cdn.example/",
		"secure": true, "sameSite": "None", "expires": time.Now().Add(time.Hour).Unix(),
		"partitionKey": map[string]any{"topLevelSite": "https://top.example", "hasCrossSiteAncestor": false}}, s, nil)
}

// seesLogin reports what a new client (its first commands) finds of login v: the cookies its page sends to
// the site, and the partitioned cookie in the jar.
func seesLogin(t *testing.T, m *managed, slug, client, site, v string) error {
	t.Helper()
	return seesLoginAt(t, m.storeWS(slug, client), site, v)
}

// seesLoginAt is seesLogin of the client at url.
func seesLoginAt(t *testing.T, url, site, v string) error {
	t.Helper()
	c := dialRaw(t, url)
	var jar struct {
		Cookies []struct{ Name, Value string }
	}
	if err := c.callInto("Storage.getCookies", map[string]any{}, "", &jar); err != nil {
		return err
	}
	part := false
	for _, ck := range jar.Cookies {
		part = part || ck.Name == "part" && ck.Value == "part-"+v
	}
	_, s := c.createPage(site + "/whoami")
	got, err := c.evaluate(s, "document.getElementById('c').textContent")
	if err != nil {
		return err
	}
	var sent string
	json.Unmarshal(got, &sent)
	if !strings.Contains(sent, "sid=sid-"+v) || !strings.Contains(sent, "cart=cart-"+v) || !part {
		return fmt.Errorf("client %s: the page sent %q and the jar holds the partitioned cookie: %v; want sid=sid-%s, "+
			"cart=cart-%s and part=part-%s", url[strings.LastIndex(url, "/")+1:], sent, part, v, v, v)
	}
	return nil
}

func (c *rawCDP) callInto(method string, params any, session string, out any) error {
	res, err := c.Call(method, params, session)
	if err != nil {
		return err
	}
	return json.Unmarshal(res, out)
}

// restoredEvents counts the login_restored events so far.
func (m *managed) restoredEvents() []api.Event {
	m.t.Helper()
	evs, err := m.client.Events(context.Background())
	if err != nil {
		m.t.Fatal(err)
	}
	var out []api.Event
	for _, ev := range evs {
		if ev.Kind == api.EventLoginRestored {
			out = append(out, ev)
		}
	}
	return out
}

// TestLoginSurvives (SPEC §18): a login whose cookies were set 3 s before (an HttpOnly login answer, a
// session cookie, a partitioned cookie) is there for the next client after (a) Chromium killed -9, (b) a
// power cut (keeper, Chromium and manager killed -9, a new manager), (c) its Cookies file overwritten with
// garbage while stopped; each restore is a login_restored event and a step of the store's task; (d) a
// checkpoint that does not open is an event, not a failed launch, and is replaced; (f) the checkpoint on
// disk is sealed, 0600.
func TestLoginSurvives(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	site := loginSite(t).URL
	m.cli("store", "add", "shop")
	m.cli("task", "set", taskA, "--store", "shop", "--status", "running")
	profile := filepath.Join(m.home, "profiles", "shop")
	jarPath := logins.JarPath(m.home, "shop")

	// (a) Chromium killed -9 3 s after the login; the manager relaunches it behind its mux.
	v1 := randomValue(t)
	login(t, dialRaw(t, m.storeWS("shop", "task-a")), site, v1)
	if _, err := os.Stat(filepath.Join(profile, logins.PortableMarker)); err != nil {
		t.Errorf("a new profile is not marked portable: %v", err)
	}
	time.Sleep(3 * time.Second) // the scenario: the kill comes 3 s after the login (VIBE_LOGIN_CHECKPOINT_S=2, + 1 s)
	before := m.browserOf("shop")
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the killed browser relaunched", func() bool {
		b := m.browserOf("shop")
		return b.Status == api.StatusRunning && b.PID != before.PID && b.PID != 0
	})
	if err := seesLogin(t, m, "shop", "after-kill", site, v1); err != nil {
		t.Errorf("after Chromium's kill -9: %v", err)
	}
	restored := len(m.restoredEvents())
	if restored == 0 {
		t.Errorf("no %s event after the kill -9 relaunch set the login back", api.EventLoginRestored)
	}

	// (b) The power cut: the keeper, Chromium and the manager killed -9 together, 3 s after a new login
	// (the site rotated the cookies); a new manager, then the next client.
	v2 := randomValue(t)
	login(t, dialRaw(t, m.storeWS("shop", "task-a2")), site, v2)
	time.Sleep(3 * time.Second)
	b := m.browserOf("shop")
	for _, pid := range []int{m.cmd.Process.Pid, b.KeeperPID, b.PID} {
		if pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	syscall.Kill(-b.PID, syscall.SIGKILL) // its renderers too: the machine went dark
	m.cmd.Wait()
	m.start()
	if err := seesLogin(t, m, "shop", "after-power-cut", site, v2); err != nil {
		t.Errorf("after the power cut: %v", err)
	}
	if n := len(m.restoredEvents()); n == 0 { // the new manager's ring starts empty
		t.Errorf("no %s event from the new manager after the power cut", api.EventLoginRestored)
	}

	// (d) A checkpoint that does not open (here: altered) is an event at the next launch, never fatal to
	// it (the login is in the profile after a clean stop), and the next checkpoint replaces it.
	m.cli("browser", "stop", "shop")
	raw, err := os.ReadFile(jarPath)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(jarPath, append(raw[:len(raw)-1], raw[len(raw)-1]^1), 0o600)
	if err := seesLogin(t, m, "shop", "after-bad-jar", site, v2); err != nil {
		t.Errorf("after the checkpoint was altered: %v", err)
	}
	all, _ := m.client.Events(context.Background())
	unreadable := false
	for _, ev := range all {
		unreadable = unreadable || ev.Kind == api.EventLoginUnreadable && strings.Contains(ev.Message, "could not be used")
	}
	if !unreadable {
		t.Errorf("no %s event for an altered checkpoint", api.EventLoginUnreadable)
	}
	key, err := seal.LoadKey(m.home, "")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the altered checkpoint replaced", func() bool {
		_, _, err := logins.ReadJar(key, m.home, "shop")
		return err == nil
	})

	// (c) The Cookies database overwritten with garbage while the browser is stopped: Chromium razes it at
	// its next start (and keeps that session's cookies in memory only), and the checkpoint brings the login
	// back.
	m.cli("browser", "stop", "shop")
	restored = len(m.restoredEvents())
	for _, name := range []string{"Cookies", "Cookies-journal"} {
		if err := os.WriteFile(filepath.Join(profile, "Default", name), bytes.Repeat([]byte("garbage!"), 512), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := seesLogin(t, m, "shop", "after-garbage", site, v2); err != nil {
		t.Errorf("after the Cookies file was overwritten: %v", err)
	}
	evs := m.restoredEvents()
	if len(evs) <= restored || !strings.Contains(evs[len(evs)-1].Message, "cookies set back") {
		t.Errorf("events %+v; want a %s saying how many cookies were set back", evs, api.EventLoginRestored)
	}
	steps := 0
	for _, e := range m.timeline(taskA).Entries {
		if e.Fault != nil && e.Fault.What == api.FaultLoginRestored {
			steps++
		}
	}
	if steps == 0 {
		t.Errorf("task %s's timeline has no %s step", taskA, api.FaultLoginRestored)
	}

	// (f) The checkpoint holds no cookie name or value in the clear, and is 0600 in 0700 folders.
	raw, err = os.ReadFile(jarPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, clear := range []string{v1, v2, "sid-", "cart", "part-", "127.0.0.1", "SQLite format", `"name"`} {
		if bytes.Contains(raw, []byte(clear)) {
			t.Errorf("the checkpoint %s holds %q in the clear", jarPath, clear)
		}
	}
	for p, want := range map[string]os.FileMode{jarPath: 0o600, filepath.Dir(jarPath): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v); want %v", p, fi.Mode().Perm(), err, want)
		}
	}
}

// checkpointReads is vibe_login_checkpoints_total by result.
func (m *managed) checkpointReads() map[string]int {
	m.t.Helper()
	out := map[string]int{}
	for _, line := range strings.Split(testkit.Metrics(m.t, filepath.Join(m.home, api.SocketRel)), "\n") {
		var result string
		var n int
		if rest, ok := strings.CutPrefix(line, `vibe_login_checkpoints_total{result="`); ok {
			if i := strings.Index(rest, `"} `); i > 0 {
				result = rest[:i]
				fmt.Sscan(rest[i+3:], &n)
				out[result] = n
				out["all"] += n
			}
		}
	}
	return out
}

// TestLoginCheckpointsInvisible: checkpoints read the jar only after something may have changed it (here
// login answers, each a navigation), at most every VIBE_LOGIN_CHECKPOINT_S, never while nothing happens; and
// a client on the same browser (its page's Network and Page domains on, discovering targets) sees no trace of
// them: no event, no target.
func TestLoginCheckpointsInvisible(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0", "VIBE_LOGIN_CHECKPOINT_S=1")
	site := loginSite(t).URL
	m.cli("store", "add", "quiet")
	watcher := dialRaw(t, m.storeWS("quiet", "watcher"))
	watcher.must("Target.setDiscoverTargets", map[string]any{"discover": true}, "", nil)
	_, ws := watcher.createPage(site + "/")
	for _, domain := range []string{"Network.enable", "Page.enable", "Runtime.enable"} {
		watcher.must(domain, map[string]any{}, ws, nil)
	}
	targets := watcher.targetIDs(true)

	// Quiet: after the settling reads of the watcher's own traffic, no read at all. A command of the watcher's
	// that came after the last read is read for at logins.ScriptEvery intervals after it: settled is a
	// longer time than that with no read.
	var quiet map[string]int
	testkit.WaitFor(t, 30*time.Second, "the checkpoints to settle", func() bool {
		before := m.checkpointReads()["all"]
		time.Sleep((logins.ScriptEvery + 1) * time.Second) // intervals with nothing happening
		quiet = m.checkpointReads()
		return quiet["all"] == before && quiet["written"] > 0
	})
	seen := len(watcher.Events(""))
	time.Sleep(3 * time.Second)
	if now := m.checkpointReads(); now["all"] != quiet["all"] {
		t.Errorf("the jar was read %d times while nothing happened; want none", now["all"]-quiet["all"])
	}

	// Busy: another client logs in again every 200 ms for 5 s (each login answer a new cookie, each a
	// navigation): at most one read a second (and the trailing one), each a new jar written.
	driver := dialRaw(t, m.storeWS("quiet", "driver"))
	_, ds := driver.createPage(site + "/")
	began := time.Now()
	for i := 0; time.Since(began) < 5*time.Second; i++ {
		driver.must("Page.navigate", map[string]any{"url": fmt.Sprintf("%s/login?v=%d", site, i)}, ds, nil)
		time.Sleep(200 * time.Millisecond)
	}
	testkit.WaitFor(t, 5*time.Second, "the last change checkpointed", func() bool {
		before := m.checkpointReads()["all"]
		time.Sleep(2500 * time.Millisecond)
		return m.checkpointReads()["all"] == before
	})
	busy := m.checkpointReads()
	elapsed := time.Since(began)
	reads, written := busy["all"]-quiet["all"], busy["written"]-quiet["written"]
	if max := int(elapsed/time.Second) + 2; reads > max || written < 3 {
		t.Errorf("%d reads (%d written) in %v of changes; want at most %d (one a second and the trailing one), at least 3 written",
			reads, written, elapsed.Round(time.Millisecond), max)
	}
	if extra := watcher.Events("")[seen:]; len(extra) != 0 {
		t.Errorf("the watcher got %d events while the jar was checkpointed: %+v", len(extra), extra)
	}
	if got := watcher.targetIDs(true); strings.Join(got, ",") != strings.Join(targets, ",") {
		t.Errorf("the watcher's targets went from %v to %v", targets, got)
	}
}

// cmdline is a process's command line.
func cmdline(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.ReplaceAll(b, []byte{0}, []byte{' '}))
}

// TestLoginCarriedOverToPortable: after a clean stop a launch sets nothing back; a profile made before the
// portable password store (no marker, no checkpoint) launches once as it was; its jar is checkpointed and it is marked; the next launch is
// portable and sets back the cookies its keyring-encrypted database no longer gives (here: overwritten).
func TestLoginCarriedOverToPortable(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	site := loginSite(t).URL
	m.cli("store", "add", "old")
	v := randomValue(t)
	login(t, dialRaw(t, m.storeWS("old", "task-a")), site, v)
	m.cli("browser", "stop", "old")
	// After a clean stop the profile has it all: the next launch sets nothing back, and says nothing.
	if err := seesLogin(t, m, "old", "after-clean-stop", site, v); err != nil {
		t.Errorf("after a clean stop: %v", err)
	}
	if evs := m.restoredEvents(); len(evs) != 0 {
		t.Errorf("a launch after a clean stop restored cookies: %+v", evs)
	}
	m.cli("browser", "stop", "old")
	profile := filepath.Join(m.home, "profiles", "old")
	marker := filepath.Join(profile, logins.PortableMarker)
	for _, p := range []string{marker, logins.JarPath(m.home, "old")} { // a profile of an older manager
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}

	if err := seesLogin(t, m, "old", "first", site, v); err != nil {
		t.Errorf("the older profile's own launch: %v", err)
	}
	if line := cmdline(t, m.browserOf("old").PID); strings.Contains(line, "--password-store=basic") {
		t.Errorf("the older profile's first launch was portable already: %s", line)
	}
	testkit.WaitFor(t, 10*time.Second, "the older profile checkpointed and marked", func() bool {
		_, errM := os.Stat(marker)
		_, errJ := os.Stat(logins.JarPath(m.home, "old"))
		return errM == nil && errJ == nil
	})
	m.cli("browser", "stop", "old")
	// Its cookies were encrypted with the keyring's key, which the portable launch does not use.
	for _, name := range []string{"Cookies", "Cookies-journal"} {
		os.WriteFile(filepath.Join(profile, "Default", name), bytes.Repeat([]byte("keyring!"), 512), 0o600)
	}
	if err := seesLogin(t, m, "old", "portable", site, v); err != nil {
		t.Errorf("the portable launch: %v", err)
	}
	if line := cmdline(t, m.browserOf("old").PID); !strings.Contains(line, "--password-store=basic") {
		t.Errorf("the launch after the carry-over is not portable: %s", line)
	}
}

// TestLoginCheckpointOfABoundStore (SPEC §14): a store with an agent user runs its browser as its browser
// user, whose checkpoint (and folder) it is, 0600 and 0700, which the agent user cannot read; and it comes
// back after a kill -9 as any store's does.
func TestLoginCheckpointOfABoundStore(t *testing.T) {
	t.Parallel()
	agent := testkit.SystemUser(t, agentUserA)
	browser := testkit.SystemUser(t, browserUser)
	m := startManagerWith(t, reachableBinaries(t), boundaryHome(t), "VIBE_BROWSER_IDLE_S=0")
	site := loginSite(t).URL
	m.cli("store", "add", "Acme", "--agent-user", agentUserA, "--browser-user", browserUser)
	st, err := m.client.GetStore(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	capWS := func(client string) string { // a bound store's clients connect by their capability (SPEC §14)
		resp, err := m.client.EnsureSession(context.Background(), api.EnsureRequest{Kind: api.KindStore, StoreID: st.ID,
			ClientID: client, BUName: "acme-" + client, TaskID: taskA})
		if err != nil {
			t.Fatal(err)
		}
		return resp.CDPWS
	}
	v := randomValue(t)
	login(t, dialRaw(t, capWS(taskA)), site, v)
	jarPath := logins.JarPath(m.home, "acme")
	testkit.WaitFor(t, 10*time.Second, "the checkpoint written", func() bool {
		_, err := os.Stat(jarPath)
		return err == nil
	})
	for p, want := range map[string]os.FileMode{jarPath: 0o600, filepath.Dir(jarPath): 0o700} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != want || int(st.Uid) != browser.UID {
			t.Errorf("%s: mode %v, uid %d; want %v, the browser user's (%d)", p, fi.Mode().Perm(), st.Uid, want, browser.UID)
		}
	}
	if err := agent.MayRead(jarPath); err == nil {
		t.Errorf("the agent user %s may read the checkpoint %s", agentUserA, jarPath)
	}
	time.Sleep(3 * time.Second)
	before := m.browserOf("acme")
	if err := syscall.Kill(before.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the killed browser relaunched", func() bool {
		b := m.browserOf("acme")
		return b.Status == api.StatusRunning && b.PID != before.PID && b.PID != 0
	})
	if err := seesLoginAt(t, capWS(taskA+"-w2"), site, v); err != nil {
		t.Errorf("after Chromium's kill -9: %v", err)
	}
}

// TestLoginCheckpointsOfAnAdoptedBrowser: a browser a restarted manager adopted is checkpointed as its own
// launch was: a login 3 s before its kill -9 is there at the next launch.
func TestLoginCheckpointsOfAnAdoptedBrowser(t *testing.T) {
	t.Parallel()
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	site := loginSite(t).URL
	m.cli("store", "add", "kept")
	login(t, dialRaw(t, m.storeWS("kept", "task-a")), site, randomValue(t))
	pid := m.browserOf("kept").PID
	if err := m.cmd.Process.Signal(syscall.SIGKILL); err != nil { // the manager alone: its browser runs on
		t.Fatal(err)
	}
	m.cmd.Wait()
	m.start()
	if b := m.browserOf("kept"); b.PID != pid || b.Status != api.StatusRunning {
		t.Fatalf("after the restart: %+v; want pid %d adopted", b, pid)
	}
	v := randomValue(t)
	login(t, dialRaw(t, m.storeWS("kept", "task-b")), site, v)
	time.Sleep(3 * time.Second) // the scenario: the kill comes 3 s after the login
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the adopted browser's death noticed", func() bool {
		b := m.browserOf("kept")
		return b.Status != api.StatusRunning || b.PID != pid
	})
	if err := seesLogin(t, m, "kept", "after-kill", site, v); err != nil {
		t.Errorf("after the adopted browser's kill -9: %v", err)
	}
}

// TestLoginOfARemoteBrowser (issue 31, item 6): a cdp store's browser is someone else's, but its login is
// checkpointed through the mux all the same; when the manager connects to it again, the cookies it lost come
// back, and a cookie it holds with another value (a person logged in there directly since) is left as it is.
func TestLoginOfARemoteBrowser(t *testing.T) {
	t.Parallel()
	remote := startChromium(t)
	m := startManager(t, "VIBE_BROWSER_IDLE_S=0")
	site := loginSite(t).URL
	m.cli("store", "add", "remote", "--backend", "cdp", "--cdp-url", remote.HTTP)
	v := randomValue(t)
	c := dialRaw(t, m.storeWS("remote", "task-r"))
	c.createPage(site + "/login?v=" + v)
	key, err := seal.LoadKey(m.home, "")
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the remote browser's checkpoint of the login", func() bool {
		content, _, err := logins.ReadJar(key, m.home, "remote")
		return err == nil && bytes.Contains(content, []byte("sid-"+v))
	})

	// The store is stopped (the manager lets go of the browser, which runs on); meanwhile the remote browser
	// loses the login cookie, and a person sets the cart there themselves. The next client connects again.
	m.cli("browser", "stop", "remote")
	direct := dialRaw(t, remote.WS)
	_, ds := direct.createPage("about:blank")
	direct.must("Network.deleteCookies", map[string]any{"name": "sid", "url": site + "/"}, ds, nil)
	direct.must("Network.setCookie", map[string]any{"name": "cart", "value": "the-person's", "url": site + "/"}, ds, nil)
	c = dialRaw(t, m.storeWS("remote", "task-r2"))
	_, s := c.createPage(site + "/whoami")
	got, err := c.evaluate(s, "document.getElementById('c').textContent")
	if err != nil {
		t.Fatal(err)
	}
	var sent string
	json.Unmarshal(got, &sent)
	if !strings.Contains(sent, "sid=sid-"+v) || !strings.Contains(sent, "cart=the-person's") || strings.Contains(sent, "cart=cart-"+v) {
		t.Errorf("the remote browser's page sends %q; want the lost sid-%s back and the person's cart kept", sent, v)
	}
	snaps, err := m.client.StoreSnapshots(context.Background(), "remote")
	if err == nil && len(snaps) > 0 {
		t.Errorf("a cdp store has snapshots %+v; its profile is not the manager's", snaps)
	}
}
