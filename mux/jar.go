package mux

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// The cookie jar, for the manager's login checkpoints (SPEC §18): the operator reads and sets the browser's
// whole jar, and the mux counts what it saw that may have changed it, so the manager reads the jar only
// when something happened. The reads and writes go on the mux's own root connection as internal commands,
// whose answers come back to the mux alone: Storage.* raises no event, so a client sees nothing of them.

// JarChanges counts what the mux has seen that may have changed the browser's cookies, so that a caller
// that remembers the count reads the jar again only when it moved. The signals are those the mux really sees
// (SPEC §18: a response that set a cookie, a navigation, a takeover's end):
//   - a response whose headers a client's Network domain reports with a Set-Cookie
//     (Network.responseReceivedExtraInfo: a login answer, an XHR that rotates a session);
//   - a page created, or announcing a navigation (Target.targetCreated/targetInfoChanged of a page, a
//     person's in the window included);
//   - a client's cookie command (Network.setCookie(s), deleteCookies, clearBrowserCookies, Storage.*Cookies,
//     Storage.clearDataFor*);
//   - a person's takeover of a tab ending (what they typed may have logged the store in).
//
// A page's own script or timer is invisible to the mux unless one of these follows.
func (tp *Taps) JarChanges() uint64 { return tp.jarGen.Load() }

// JarScripts counts the clients' other commands on pages: any of them may run a script that sets
// document.cookie, but agents send them without end, so they are a weaker signal than JarChanges (the
// manager reads the jar for them at a slower pace).
func (tp *Taps) JarScripts() uint64 { return tp.jarScripts.Load() }

// Launches counts the connections to a freshly launched browser on which Hooks.Launched has run or runs. It
// moves before the connection serves anything, so a caller that read it before a call and finds it moved
// after knows the answer may come from a browser whose launch hook has not finished (a jar not restored yet).
func (tp *Taps) Launches() uint64 { return tp.launches.Load() }

// countJarCommand counts a client's command that may change cookies (JarChanges, JarScripts).
func (tp *Taps) countJarCommand(method, sessionID string) {
	switch {
	case cookieCommand(method):
		tp.jarGen.Add(1)
	case sessionID != "":
		tp.jarScripts.Add(1)
	}
}

// cookieCommand reports whether a command sets or clears cookies directly.
func cookieCommand(method string) bool {
	domain, name, _ := strings.Cut(method, ".")
	return (domain == "Network" || domain == "Storage") && strings.Contains(name, "Cookie") && !strings.HasPrefix(name, "get") ||
		strings.HasPrefix(method, "Storage.clearDataFor")
}

// setCookieHeader is how a response's Set-Cookie shows in Network.responseReceivedExtraInfo's headers (HTTP/2
// and HTTP/3 names are lower-case, HTTP/1.1 ones as the server wrote them, almost always Set-Cookie).
var setCookieHeaders = [][]byte{[]byte(`"set-cookie"`), []byte(`"Set-Cookie"`)}

// jarEventLocked counts a session event that may have changed cookies: a response that set one.
func (tp *Taps) jarEventLocked(method string, b []byte) {
	if method != "Network.responseReceivedExtraInfo" {
		return
	}
	for _, h := range setCookieHeaders {
		if bytes.Contains(b, h) {
			tp.jarGen.Add(1)
			return
		}
	}
}

// Cookies returns the browser's whole cookie jar as Chrome's JSON array of Network.Cookie: Storage.getCookies
// on the browser (the default context), HttpOnly, partitioned and session cookies included.
func (o *Operator) Cookies(ctx context.Context) (json.RawMessage, error) {
	res, err := o.call(ctx, "Storage.getCookies", nil, "")
	if err != nil {
		return nil, err
	}
	var r struct {
		Cookies json.RawMessage `json:"cookies"`
	}
	if err := json.Unmarshal(res, &r); err != nil || len(r.Cookies) == 0 {
		return nil, fmt.Errorf("mux: Storage.getCookies: no cookies in the answer: %w", err)
	}
	return r.Cookies, nil
}

// SetCookies sets cookies, a JSON array of Network.CookieParam, in the browser's default context
// (Storage.setCookies).
func (o *Operator) SetCookies(ctx context.Context, cookies json.RawMessage) error {
	_, err := o.call(ctx, "Storage.setCookies", struct {
		Cookies json.RawMessage `json:"cookies"`
	}{cookies}, "")
	return err
}
