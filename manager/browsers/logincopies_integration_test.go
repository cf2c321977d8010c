//go:build integration

package browsers

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/logins"
	"vibebrowser/manager/seal"
)

// chromeFleet is fakeFleet on the real Chromium, checkpointing every 250 ms.
func chromeFleet(t *testing.T, set func(*Config)) (*Fleet, *fakeBackend) {
	t.Helper()
	bin, err := chrome.Find("")
	if err != nil {
		t.Fatalf("the integration tests need Chromium (go tool task deps): %v", err)
	}
	headless := true
	f, fb := fakeFleet(t, func(c *Config) {
		c.Chrome, c.Headless, c.LoginCheckpoint = bin, &headless, 250*time.Millisecond
		set(c)
	})
	f.backends = newBackends(&f.cfg, f.db, f.root)
	return f, fb
}

// loginPage is a marketplace's login: /login?v=V answers with an HttpOnly login cookie sid=sid-V.
func loginPage(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" { // not /favicon.ico, which the browser asks for too
			http.SetCookie(w, &http.Cookie{Name: "sid", Value: "sid-" + r.URL.Query().Get("v"), Path: "/", MaxAge: 86400, HttpOnly: true})
		}
		fmt.Fprint(w, "<!doctype html><title>logged in</title>welcome")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// logIn opens in's browser on the login page with value v, as a person logging the store in does, and,
// once the browser holds the login cookie, a second tab: a person's tab's Set-Cookie is invisible to the mux
// (SPEC §18 reads the jar on a page created or navigated), so the checkpoint that follows is sure to see it.
func logIn(t *testing.T, in *Instance, site, v string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := in.Mux().Operator().NewHumanTab(ctx, site+"/login?v="+v); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the browser holding login "+v, func() bool { return hasLogin(browserCookies(t, in), v) })
	if _, err := in.Mux().Operator().NewHumanTab(ctx, "about:blank"); err != nil {
		t.Fatal(err)
	}
}

// hasLogin reports whether cookies hold the HttpOnly login cookie sid=sid-v.
func hasLogin(cookies []logins.Cookie, v string) bool {
	return slices.ContainsFunc(cookies, func(c logins.Cookie) bool {
		return c.Name == "sid" && c.Value == "sid-"+v && c.HTTPOnly
	})
}

// copiedLogin reports whether the copies' jar of sp, opened with key, holds login v; its sealed bytes must
// not hold the cookie in the clear.
func copiedLogin(t *testing.T, copies *memCopies, key *seal.Key, sp Spec, v string) bool {
	t.Helper()
	copies.mu.Lock()
	j, ok := copies.jars[sp.Key]
	copies.mu.Unlock()
	if !ok {
		return false
	}
	if bytes.Contains(j.b, []byte("sid-"+v)) {
		t.Fatalf("the jar copy holds the login cookie sid-%s in the clear", v)
	}
	content, err := logins.OpenJar(key, sp.Slug, j.b)
	if err != nil {
		t.Fatalf("the jar copy does not open with the cluster's key: %v", err)
	}
	jar, err := logins.Decode(content)
	return err == nil && hasLogin(jar.Cookies, v)
}

// browserCookies is the cookie jar of in's browser.
func browserCookies(t *testing.T, in *Instance) []logins.Cookie {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := in.Mux().Operator().Cookies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := logins.ParseCookies(raw)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestLoginCopiesCarryTheCookieToAFreshHome (SPEC §19 "A store's login is the cluster's"), with the real
// Chromium: an HttpOnly login cookie set on home A's browser reaches the copies with its checkpoint, sealed;
// A's clean stop puts its snapshot there too. A logs in again (the site rotated the cookie), and while that
// login is only in A's browser and its checkpoint, a fresh home B (same store, no profile, no snapshot, no
// checkpoint) launches the store: its profile is rebuilt from the cluster's snapshot (the older login) and
// the cluster's checkpoint sets the newer one back, a login_restored event.
func TestLoginCopiesCarryTheCookieToAFreshHome(t *testing.T) {
	site := loginPage(t)
	copies, key := newMemCopies(), clusterKey(t)
	a, _ := chromeFleet(t, inCluster(copies, key))
	sp := fakeStore(t, a, "Shop")
	ctx := context.Background()

	in, err := a.Ensure(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	logIn(t, in, site, "v1")
	testkit.WaitFor(t, 20*time.Second, "home A's login v1 in the copies", func() bool { return copiedLogin(t, copies, key, sp, "v1") })
	if err := a.Stop(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	if err := a.AwaitLoginCopies(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	_, _, rc, err := copies.NewestSnapshot(ctx, sp.Key)
	if err != nil {
		t.Fatalf("no snapshot copy after home A's clean stop: %v", err)
	}
	rc.Close()
	copies.mu.Lock()
	for id, s := range copies.snaps[sp.Key] {
		noneInTheClear(t, "snapshot copy "+id, s.b, "SQLite format 3", "ustar", "sid-v1", "Cookies")
	}
	copies.mu.Unlock()

	in, err = a.Ensure(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	logIn(t, in, site, "v2")
	testkit.WaitFor(t, 20*time.Second, "home A's login v2 in the copies", func() bool { return copiedLogin(t, copies, key, sp, "v2") })

	b, fb := chromeFleet(t, inCluster(copies, key))
	sameStore(t, b, sp)
	inB, err := b.Ensure(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "home B's browser holding login v2", func() bool { return hasLogin(browserCookies(t, inB), "v2") })
	testkit.WaitFor(t, 10*time.Second, "home B's login_restored event", func() bool {
		return slices.Contains(fb.eventKinds(sp.Key), api.EventLoginRestored)
	})
	if !slices.Contains(fb.eventKinds(sp.Key), api.EventProfileRebuilt) {
		t.Errorf("home B's events = %v; want %s (its profile from the cluster's snapshot)", fb.eventKinds(sp.Key), api.EventProfileRebuilt)
	}
}

// TestLoginCopiesAnsweringNothingDelayNoCheckpoint, with the real Chromium: copies that never answer (a
// cluster cut off) delay the first launch by fetchBoundNone at most (this host holds no login of the store),
// and neither a checkpoint nor a stop.
func TestLoginCopiesAnsweringNothingDelayNoCheckpoint(t *testing.T) {
	site := loginPage(t)
	key := clusterKey(t)
	f, _ := chromeFleet(t, inCluster(&hangingCopies{}, key))
	sp := fakeStore(t, f, "Shop")
	ctx := context.Background()
	began := time.Now()
	in, err := f.Ensure(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > fetchBoundNone+10*time.Second {
		t.Errorf("a launch with copies that do not answer took %v; want fetchBoundNone (%v) more than a launch", took, fetchBoundNone)
	}
	logIn(t, in, site, "v1")
	testkit.WaitFor(t, 20*time.Second, "the login in this host's checkpoint", func() bool {
		content, _, err := logins.ReadJar(key, f.cfg.Home, sp.Slug)
		if err != nil {
			return false
		}
		jar, err := logins.Decode(content)
		return err == nil && hasLogin(jar.Cookies, "v1")
	})
	for range 3 {
		began = time.Now()
		if _, err := in.logins.checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > time.Second {
			t.Errorf("a checkpoint with copies that do not answer took %v", took)
		}
	}
	began = time.Now()
	if err := f.Stop(ctx, sp.Key); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(began); took > stopBound {
		t.Errorf("a stop with copies that do not answer took %v; want within its own bound %v", took, stopBound)
	}
}
