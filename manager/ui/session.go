package ui

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// A login is a session: a random id in an HttpOnly, SameSite=Strict cookie, and a path of its own,
// /s/<key>/ with key an HMAC of the id under the server's random key, under which all its pages live. The
// cookie's Path is that path, so a browser sends it nowhere else: not to another path of the UI, and not
// to a page an agent serves on another port of 127.0.0.1 (cookies belong to a host, whatever the port, and
// SameSite counts every loopback port as the same site). A cookie alone opens nothing either: a request
// must name its session's path too, which only the session's pages know (never a cookie, never in a
// Referer under no-referrer). The pages' links are relative to that path (<base>, layout.html).

// session is one login.
type session struct {
	last    time.Time         // its last request
	notices map[string]notice // the banners its own actions asked for, by code (notices.go)
}

// keyHex is how many hex digits of the HMAC name a session's path: 128 bits.
const keyHex = 32

// sessionPrefix is the path the pages of session id live under, without its final slash: /s/<key>.
func (s *Server) sessionPrefix(id string) string {
	mac := hmac.New(sha256.New, s.formKey[:])
	mac.Write([]byte("vibe-browser session path\x00" + id))
	return "/s/" + hex.EncodeToString(mac.Sum(nil))[:keyHex]
}

// baseKey carries the session's base ("/s/<key>/") in a request's context, for its pages and redirects.
type baseKey struct{}

// sessionBase is the base of r's session, "" outside one.
func sessionBase(r *http.Request) string {
	b, _ := r.Context().Value(baseKey{}).(string)
	return b
}

// inSession serves r under its session's path to next, with that path stripped: a request must name a
// session's path and carry that session's live cookie. Without either it is a person to log in (401); a
// cookie at the wrong path, or at none, was not sent by a browser of that session's pages, and is refused.
func (s *Server) inSession(w http.ResponseWriter, r *http.Request, next http.Handler) {
	prefix, rest, named := splitSession(r.URL.Path)
	c, err := r.Cookie(sessionCookie)
	switch {
	case err != nil || !s.validSession(c.Value):
		s.unauthorized(w, r)
		return
	case !named || !hmac.Equal([]byte(prefix), []byte(s.sessionPrefix(c.Value))):
		s.cfg.Log.Warn().Msg("refused a session cookie at an address other than its session's")
		s.message(w, r, http.StatusForbidden, "This login's cookie does not open this address",
			"A login's cookie works only together with the address of its own pages, which the browser that logged in "+
				"keeps. This request carried the cookie at another address: it did not come from that login's pages.",
			"Open the UI from the pages of your login, or run vibe-browser ui on the manager's machine for a new one.", "")
		return
	case rest == "":
		http.Redirect(w, r, prefix+"/", http.StatusMovedPermanently)
		return
	}
	ctx := context.WithValue(r.Context(), baseKey{}, prefix+"/")
	http.StripPrefix(prefix, next).ServeHTTP(w, r.WithContext(ctx))
}

// splitSession splits "/s/<key>/rest" into "/s/<key>" and "/rest"; named is false for a path outside
// every session.
func splitSession(path string) (prefix, rest string, named bool) {
	after, ok := strings.CutPrefix(path, "/s/")
	if !ok {
		return "", "", false
	}
	key, _, _ := strings.Cut(after, "/")
	if len(key) != keyHex || strings.Trim(key, "0123456789abcdef") != "" {
		return "", "", false
	}
	prefix = "/s/" + key
	return prefix, path[len(prefix):], true
}

// validSession reports whether id is a live session, and renews its idle time.
func (s *Server) validSession(id string) bool {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	ses, ok := s.sessions[id]
	if !ok || now.Sub(ses.last) >= sessionIdle {
		delete(s.sessions, id)
		return false
	}
	ses.last = now
	return true
}

// redirect answers a form with 303 to path, a page of r's session ("store/shop", "" for the overview).
func (s *Server) redirect(w http.ResponseWriter, r *http.Request, path string) {
	base := sessionBase(r)
	if base == "" {
		base = "/"
	}
	http.Redirect(w, r, base+path, http.StatusSeeOther)
}
