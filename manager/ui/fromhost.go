package ui

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"
)

// A store's pages shown by another host's UI (SPEC §19 "One pane"). That host's UI applied every one of its
// access rules to its person's request (Host, peer, Origin or form token, session: guard), then relayed it here
// through the door (relay.go), which lets in only the cluster's hosts: peer, the name of the host whose
// certificate was verified, is who relays. Here such a request skips the rules its host applied and nothing
// else: it reaches a store's routes only, gets the security headers, and what it says of its person (their
// viewer id and form token there, their session's path there) is read from a relayed request alone, and names
// the relaying host: a takeover is held by "<viewer>@<host>".

// The headers in which a relaying host speaks for its person (relay.go sets them). They are read only on a
// connection a door handed over; on the UI's own listener they mean nothing.
const (
	hdrBase   = "X-Vibe-Relay-Base"   // the person's session path there, "/s/<key>/": where the pages' links go
	hdrViewer = "X-Vibe-Relay-Viewer" // the person's viewerID there
	hdrToken  = "X-Vibe-Relay-Token"  // the person's form token there, for the pages' forms (checked there)
)

// hostIdle is how long a relaying host's idle connection is kept (relay.go keeps its own for less).
const hostIdle = 2 * time.Minute

// relayed is what a relaying host says of the person whose request it relays.
type relayed struct {
	host   string // the relaying host, as its certificate names it
	base   string
	viewer string
	token  string
}

// who names the person for a takeover and their notices: their viewer id on the host that relays them.
func (r relayed) who() string { return r.viewer + "@" + r.host }

// relayKey carries a relayed request's relayed; hostKey a handed connection's peer host.
type (
	relayKey struct{}
	hostKey  struct{}
)

// relayOf is what r's relaying host says of its person; false for a request of this UI's own listener.
func relayOf(r *http.Request) (relayed, bool) {
	rel, ok := r.Context().Value(relayKey{}).(relayed)
	return rel, ok
}

// The shapes of what a relaying host says: a session path (sessionPrefix), a viewerID, a formToken.
var (
	relayedBase   = regexp.MustCompile(`^/s/[0-9a-f]{32}/$`)
	relayedViewer = regexp.MustCompile(`^[0-9a-f]{16}$`)
	relayedToken  = regexp.MustCompile(`^[0-9a-f]{64}$`)
)

// relayFrom reads what host says of its person in r's headers.
func relayFrom(host string, h http.Header) (relayed, error) {
	rel := relayed{host: host, base: h.Get(hdrBase), viewer: h.Get(hdrViewer), token: h.Get(hdrToken)}
	switch {
	case host == "":
		return rel, errors.New("the connection names no host of the cluster")
	case !relayedBase.MatchString(rel.base):
		return rel, fmt.Errorf("%s must be the person's session path on host %s, /s/<32 hex digits>/", hdrBase, host)
	case !relayedViewer.MatchString(rel.viewer):
		return rel, fmt.Errorf("%s must be the person's viewer id on host %s, 16 hex digits", hdrViewer, host)
	case !relayedToken.MatchString(rel.token):
		return rel, fmt.Errorf("%s must be the person's form token on host %s, 64 hex digits", hdrToken, host)
	}
	return rel, nil
}

// relayable reports whether path is one of a store's routes, the only ones another host relays.
func relayable(path string) bool {
	return strings.HasPrefix(path, "/store/") || strings.HasPrefix(path, "/live/store/")
}

// hostSide serves the requests other hosts relay: the security headers, then a store's routes with the
// relaying host's word for its person.
type hostSide struct {
	s  *Server
	ln *hostListener // the connections the doors hand over (ServeHost)
}

func newHostSide(s *Server) *hostSide { return &hostSide{s: s, ln: newHostListener()} }

func (h *hostSide) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s := h.s
	for k, v := range securityHeaders {
		w.Header().Set(k, v)
	}
	host, _ := r.Context().Value(hostKey{}).(string)
	rel, err := relayFrom(host, r.Header)
	if err != nil {
		s.cfg.Log.Warn().Err(err).Str("from", host).Msg("refused a request another host relayed to the web UI")
		s.plain(w, http.StatusBadRequest, "refused: a request another host relays to this UI speaks for its person "+
			"in its headers, and this one does not: "+err.Error())
		return
	}
	if !relayable(r.URL.Path) {
		s.plain(w, http.StatusNotFound, "not found: another host's UI relays a store's pages here (/store/SLUG…, "+
			"/live/store/SLUG) and nothing else; its person's other pages are that host's own")
		return
	}
	ctx := context.WithValue(context.WithValue(r.Context(), relayKey{}, rel), baseKey{}, rel.base)
	s.routes.ServeHTTP(w, r.WithContext(ctx))
}

// ServeHost serves conn, a connection the door let through for this UI from the cluster's host peer (its
// certificate verified): the HTTP requests on it are that host's relays of its person's (hostSide). It returns
// once Serve has taken the connection, or with an error when it does not within hostHandWithin.
func (s *Server) ServeHost(peer string, conn net.Conn) error {
	return s.fromHosts.ln.hand(hostConn{Conn: conn, peer: peer})
}

// hostConn is a connection another host's door handed over, with that host's name.
type hostConn struct {
	net.Conn
	peer string
}

// hostContext is the other hosts' server's ConnContext: each request knows its connection's host.
func hostContext(ctx context.Context, c net.Conn) context.Context {
	if hc, ok := c.(hostConn); ok {
		return context.WithValue(ctx, hostKey{}, hc.peer)
	}
	return ctx
}

// hostHandWithin bounds a hand-over: a UI not serving yet (the manager starting) or any more refuses it.
const hostHandWithin = 5 * time.Second

// hostListener is the listener the other hosts' server accepts handed connections from.
type hostListener struct {
	conns chan net.Conn // unbuffered: a hand-over waits for the server's Accept
	done  chan struct{}
	once  sync.Once
}

func newHostListener() *hostListener {
	return &hostListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// hand gives conn to the server, unless the listener is closed or does not take it within hostHandWithin.
func (l *hostListener) hand(conn net.Conn) error {
	t := time.NewTimer(hostHandWithin)
	defer t.Stop()
	select {
	case l.conns <- conn:
		return nil
	case <-l.done:
		return errors.New("the web UI is stopping")
	case <-t.C:
		return fmt.Errorf("the web UI did not take the connection within %s (is it serving?)", hostHandWithin)
	}
}

func (l *hostListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *hostListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr is a door's: the connections come from other hosts, not from an address of this UI.
func (l *hostListener) Addr() net.Addr { return doorAddr{} }

type doorAddr struct{}

func (doorAddr) Network() string { return "door" }
func (doorAddr) String() string  { return "the cluster's door" }
