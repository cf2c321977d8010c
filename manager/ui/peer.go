package ui

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"vibebrowser/mux/sys/sockowner"
)

// The UI is the person's, never an agent's (SPEC §11, §14): every connection's peer is the local user the
// kernel's socket table names (sockowner, as the proxy forwarder reads it), and Config.AllowUser decides
// whether that user may use the UI at all, before its login or its cookie count.

// peerKey carries a connection's verdict (*peerVerdict) into its requests.
type peerKey struct{}

// peerVerdict is one connection's: decided at its first request, kept for the others.
type peerVerdict struct {
	once sync.Once
	err  error
}

// peerContext is the UI server's ConnContext: a place for the connection's verdict.
func peerContext(ctx context.Context, _ net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, &peerVerdict{})
}

// peerErr is why r's peer may not use the UI; nil when it may.
func (s *Server) peerErr(r *http.Request) error {
	if s.cfg.AllowUser == nil {
		return nil
	}
	v, ok := r.Context().Value(peerKey{}).(*peerVerdict)
	if !ok { // a server other than Serve's (the tests' httptest): decided per request
		return s.decidePeer(r)
	}
	v.once.Do(func() { v.err = s.decidePeer(r) })
	return v.err
}

// decidePeer reads r's peer's uid and asks AllowUser. A peer on another machine (VIBE_UI_ALLOW_REMOTE) has
// no socket in this machine's table and no local user: its login code is what admits it. A loopback peer
// whose owner cannot be read is refused: it is on this machine, and nothing says whose it is.
func (s *Server) decidePeer(r *http.Request) error {
	uid, err := sockowner.OfRequest(r)
	switch {
	case err != nil && !fromLoopback(r):
		return nil
	case err != nil:
		return fmt.Errorf("the user at the other end of this connection could not be read from the kernel's socket table (%v), "+
			"and the web UI serves only the users it knows", err)
	case uid == sockowner.Unknown: // no /proc (every system but Linux): as before the owner was checked
		return nil
	}
	return s.cfg.AllowUser(uid)
}

// sentence is an error's text as a page's sentence: capitalized, with its full stop.
func sentence(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(r)) + s[n:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

func fromLoopback(r *http.Request) bool {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return err == nil && ap.Addr().Unmap().IsLoopback()
}

// refusePeer answers a user the UI does not serve, naming the rule.
func (s *Server) refusePeer(w http.ResponseWriter, r *http.Request, why error) {
	s.cfg.Log.Warn().Err(why).Msg("refused a connection to the web UI: its user may not use it")
	s.message(w, r, http.StatusForbidden, "This user may not use the web UI", sentence(why.Error()),
		"Open the UI in a browser that runs as the manager's own user, as root, or as a user VIBE_UI_USERS names "+
			"(comma-separated, in the manager's environment; restart the manager after a change). A store's agent or "+
			"browser user is never let in.", "")
}
