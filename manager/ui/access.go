package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// sessionCookie names the UI's session cookie.
const sessionCookie = "vibe_ui_session"

// securityHeaders go on every answer, errors included (SPEC §11). No inline script or style is allowed:
// the pages' JavaScript and CSS are embedded files under /assets/.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; frame-ancestors 'none'",
	"X-Frame-Options":         "DENY",
	"Referrer-Policy":         "no-referrer",
	"X-Content-Type-Options":  "nosniff",
	// Nothing of the UI loads into a page of another origin: a picture or a file of it is this origin's alone.
	"Cross-Origin-Resource-Policy": "same-origin",
}

// guard applies the access rules, in this order: headers, Host, the public assets, the peer's user
// (peer.go), Origin (or a form's token), then the session (inSession): /login hands out a cookie scoped
// to the session's own path, and every other request must come under that path with that cookie.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		// A foreign Host is a page of another site that made its name resolve to us (DNS rebinding).
		if !s.ownHosts[strings.ToLower(r.Host)] {
			_, port, _ := net.SplitHostPort(s.urlHost)
			s.plain(w, http.StatusForbidden, "forbidden: the Host "+quote(r.Host)+" is not this UI's address "+s.urlHost+
				" (other names are refused, so that no other site can reach the UI through its own). Open http://"+
				s.urlHost+"/ instead; through an SSH tunnel, forward the same port: ssh -L "+port+":"+s.urlHost+
				" <the manager's machine>")
			return
		}
		// The stylesheet and scripts are the binary's own files, the same for everyone: served before any
		// rule, so that even a refusal's page reads well.
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/assets/") {
			next.ServeHTTP(w, r)
			return
		}
		if err := s.peerErr(r); err != nil {
			s.refusePeer(w, r, err)
			return
		}
		if needsFormToken(r) && r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		if !s.sameOrigin(r) {
			s.plain(w, http.StatusForbidden, s.refusedOrigin(r))
			return
		}
		if r.URL.Path == "/login" {
			next.ServeHTTP(w, r)
			return
		}
		s.inSession(w, r, next)
	})
}

// origin is the UI's own origin as the browser that sent r sees it (its Host was checked).
func (s *Server) origin(r *http.Request) string { return "http://" + strings.ToLower(r.Host) }

// sameOrigin refuses cross-site requests that could act or read a live channel. Every state-changing
// method and every WebSocket upgrade must come from a page of this UI, which a browser says in one of two
// ways no page can forge: Sec-Fetch-Site "same-origin", or our own Origin. The pages' forms are plain
// forms: under the UI's no-referrer policy their POSTs carry "Origin: null", and their Sec-Fetch-Site
// vouches for them. Refused: "same-site" (a page on another port of this host, which SameSite counts as
// ours: one that learnt a session's path would get its cookie sent), "cross-site" and "none". Browsers send Fetch Metadata to loopback and https://
// addresses only, so plain HTTP to another address (VIBE_UI_ALLOW_REMOTE) leaves a form's POST with
// "Origin: null" and nothing else: such a POST (or one with no Origin at all) passes only with the form's
// token of the viewer's session (formTokenVouches), which a page of another site, same-site ones
// included, cannot read. net/http's CrossOriginProtection checks the same headers, but passes every GET
// (a WebSocket upgrade is one) and a request that carries neither, both of which this refuses.
//
// A GET needs no Origin (browsers send none for same-origin GETs), but one that carries a foreign Origin
// (a cross-site EventSource or fetch) is refused.
func (s *Server) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	own := strings.EqualFold(origin, s.origin(r))
	if !isStrict(r) {
		return origin == "" || own
	}
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin":
		return own || origin == "" || origin == "null"
	case "":
		return own || needsFormToken(r) && s.formTokenVouches(r)
	}
	return false
}

// ownPagesOnly serves what the pages show of a task or a tab (a screenshot, a thumbnail, a download, an
// export) only to the UI's own pages and to the person's own navigation (Sec-Fetch-Site same-origin or
// none), never to a page of another port or site that would load it as its own picture or file. Browsers
// send no Fetch Metadata over plain HTTP to an address other than a loopback one (VIBE_UI_ALLOW_REMOTE):
// there the session's path and cookie are the rule.
func ownPagesOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch site := r.Header.Get("Sec-Fetch-Site"); site {
		case "same-origin", "none", "":
			h(w, r)
		default:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte("forbidden: screenshots, thumbnails, downloads and exports go only to this UI's own pages " +
				"(this request is Sec-Fetch-Site: " + site + "); open them from the task or store page\n"))
		}
	}
}

// isStrict reports whether r must come from a page of the UI: it changes something or opens a WebSocket.
func isStrict(r *http.Request) bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead ||
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// needsFormToken reports whether only a form's token can vouch for r: a POST that says nothing of where it
// comes from (Origin null or none, no Sec-Fetch-Site), as a plain form's does over plain HTTP to a
// non-loopback address. Never a WebSocket upgrade (a GET, and browsers always send its real Origin).
func needsFormToken(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	return r.Method == http.MethodPost && (origin == "" || origin == "null") && r.Header.Get("Sec-Fetch-Site") == ""
}

// formTokenField names the hidden input of every POST form the pages render (the "form-token" template
// of layout.html); its value is formToken's.
const formTokenField = "form_token"

// maxFormBytes bounds the body the guard reads for a form's token, before the handler runs: the UI's
// largest form, a handoff's note of api.MaxHandoffNote characters, is under 64 KiB even percent-encoded.
const maxFormBytes = 1 << 20

// formToken is the synchronizer token of r's session, for the pages' POST forms: an HMAC of the session
// id under the server's random key, so it is the same for every page of one session, useless for another
// and unknown to anyone without the page (a page of another site reads neither it nor the cookie). "" without
// a session cookie. It goes only into forms' bodies: never in a URL, never in a log.
func (s *Server) formToken(r *http.Request) string {
	if rel, ok := relayOf(r); ok {
		return rel.token // its host's, which checks it when the form comes back there (fromhost.go)
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return ""
	}
	mac := hmac.New(sha256.New, s.formKey[:])
	mac.Write([]byte("vibe-browser form token\x00" + c.Value))
	return hex.EncodeToString(mac.Sum(nil))
}

// formTokenVouches reports whether r's form carries its session's token. It parses the form with
// r.ParseForm (guard bounds the body by maxFormBytes first), so the handler's own r.FormValue reads the
// same form afterwards; only the body's urlencoded fields count, never the URL's query. A request
// without a session cookie is refused unread.
func (s *Server) formTokenVouches(r *http.Request) bool {
	want := s.formToken(r)
	if want == "" {
		return false
	}
	if err := r.ParseForm(); err != nil {
		return false
	}
	return hmac.Equal([]byte(r.PostForm.Get(formTokenField)), []byte(want))
}

// refusedOrigin is sameOrigin's refusal, for a person.
func (s *Server) refusedOrigin(r *http.Request) string {
	msg := "forbidden: the request comes from " + quote(r.Header.Get("Origin"))
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		msg += " (Sec-Fetch-Site: " + site + ")"
	}
	msg += ", not from this UI (" + s.origin(r) + ")"
	if needsFormToken(r) {
		_, port, _ := net.SplitHostPort(s.urlHost)
		msg += ". If you pressed a button of this UI: over plain HTTP to an address other than a loopback one, " +
			"browsers do not say where a form comes from, so the UI takes a form only with the token its page carries " +
			"for your login, and this one has none, or one of another login (a page opened before you last logged in). " +
			"Reload the page and press again. Better still, serve the UI on 127.0.0.1 " +
			"(VIBE_UI_ADDR=127.0.0.1:" + port + ") and reach it from another machine through an SSH tunnel: " +
			"ssh -L " + port + ":127.0.0.1:" + port + " <the manager's machine>"
	}
	return msg
}

// viewerID names the person behind r's session for a takeover (mux.View.Hold): stable across their
// reconnects, and not the cookie itself, which other viewers must never learn. A person another host relays
// is named with that host (relayed.who).
func viewerID(r *http.Request) string {
	if rel, ok := relayOf(r); ok {
		return rel.who()
	}
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256([]byte(c.Value))
	return hex.EncodeToString(sum[:8])
}

// handleLogin spends a login code for a session cookie.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("code")
	next := "/"
	if n, ok := r.URL.Query()["next"]; ok {
		// Checked before the code is spent: a link someone tampered with costs the person nothing.
		// Its words are never echoed: a link anyone wrote must not make the UI say them.
		if err := SafeNext(n[0]); err != nil {
			s.message(w, r, http.StatusBadRequest, "This login link is not valid",
				"Its next= is not a page of this UI, so the link was changed after vibe-browser printed it.",
				"Use the link exactly as vibe-browser ui or vibe-browser store login printed it.", "")
			return
		}
		next = n[0]
	}
	now := s.cfg.Now()
	s.mu.Lock()
	exp, ok := s.codes[code]
	delete(s.codes, code) // single use, even when it had expired
	var id string
	if ok && now.Before(exp) {
		id = randomHex()
		for sid, old := range s.sessions {
			if now.Sub(old.last) >= sessionIdle {
				delete(s.sessions, sid)
			}
		}
		s.sessions[id] = &session{last: now}
	}
	s.mu.Unlock()
	if id == "" {
		s.cfg.Log.Warn().Bool("known", ok).Msg("refused a login code: used, expired or unknown")
		s.message(w, r, http.StatusUnauthorized, "This login link is used or expired",
			"Each link from vibe-browser ui works once, within a minute.",
			"Run vibe-browser ui (or vibe-browser ui --open) again in a terminal on the manager's machine for a new one.", "")
		return
	}
	prefix := s.sessionPrefix(id)
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: prefix, HttpOnly: true,
		SameSite: http.SameSiteStrictMode})
	s.cfg.Log.Info().Msg("a person logged in to the web UI")
	// 303 to a page of ours: the code leaves the address bar and the history.
	http.Redirect(w, r, prefix+next, http.StatusSeeOther)
}

// SafeNext accepts where a login may land: a path of this UI ("/store/shop/tab/ID"), never another
// site. It refuses absolute URLs, scheme-relative "//host" and "/\host" (browsers read both as a
// host), and anything with control characters or a fragment.
func SafeNext(next string) error {
	bad := func(why string) error {
		return fmt.Errorf("next %q is not allowed (%s): it must be a path of this UI that starts with one /, "+
			"like /store/SLUG/tab/ID", next, why)
	}
	switch {
	case !strings.HasPrefix(next, "/"):
		return bad("not a path starting with /")
	case strings.HasPrefix(next, "//") || strings.HasPrefix(next, "/\\"):
		return bad("it names another host")
	case strings.ContainsAny(next, "\\#") || strings.IndexFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0:
		return bad("backslashes, fragments and control characters are not allowed")
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" || u.User != nil {
		return bad("not a plain path")
	}
	return nil
}

// unauthorized answers a request without a valid session: a page for people, a line for programs.
func (s *Server) unauthorized(w http.ResponseWriter, r *http.Request) {
	if wantsHTML(r) {
		// "resume": where this browser keeps a login, session.js opens the same page in it instead.
		s.renderIn(w, http.StatusUnauthorized, "message", "", "resume", message{Title: "Log in to vibe-browser",
			Text:   "This page needs a login from the manager's machine.",
			Action: "Run vibe-browser ui (or vibe-browser ui --open) in a terminal on the manager's machine and open the link it prints."})
		return
	}
	s.plain(w, http.StatusUnauthorized, "unauthorized: run `vibe-browser ui` on the manager's machine and open the link it prints")
}

func wantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

func (s *Server) plain(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(msg + "\n"))
}

// randomHex is 128 random bits in hex: login codes and session ids.
func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it panics instead)
	return hex.EncodeToString(b[:])
}

func quote(s string) string { return "\"" + s + "\"" }
