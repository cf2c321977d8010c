package ui

import (
	"context"
	"errors"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"syscall"
	"time"

	"vibebrowser/manager/api"
)

// A store placed on another host of a cluster is shown by that host's UI (SPEC §19 "One pane"): its pages,
// live stream, thumbnails, live view and takeover, and the forms that start its browser or open and close its
// human tabs. Here every access rule applies first (guard: Host, peer, Origin or form token, session), then
// each of the store's routes goes to the store's host through the door (Cluster.DialUI), speaking for the
// person (fromhost.go) and without their cookie, which never leaves this host. A host that is not alive, or
// whose door does not answer within RelayBound, gets the person a page saying so at once, never a wait.

// Cluster is the UI's view of the other hosts of a cluster; the manager implements it.
type Cluster interface {
	// Owner is the host that runs the store of slug when that is another host than this one; false when the
	// store is this host's, not placed, or unknown.
	Owner(ctx context.Context, slug string) (Owner, bool)
	// DialUI opens a connection to host's web UI through its door.
	DialUI(ctx context.Context, host string) (net.Conn, error)
	// MovesAfter is how long a host may be silent before its stores move to the live hosts.
	MovesAfter() time.Duration
}

// Owner is the host of a store placed elsewhere, as this host sees it.
type Owner struct {
	Host  string
	Store string        // the store's name
	Alive bool          // its heartbeat moved within the cluster's host TTL
	Quiet time.Duration // since its heartbeat last moved (0: never seen)
}

// RelayBound bounds the wait for a store's host: its door must answer within it (SPEC §19: a host that does
// not answer within 1 s is shown as unreachable).
const RelayBound = time.Second

// relayAnswerWithin bounds the store's host's answer once its door let the request through: its slowest
// route, opening a human tab, waits up to 15 s for the browser.
const relayAnswerWithin = 20 * time.Second

// relayedHeaders are the request headers that go to the store's host: what its pages need of the person's
// browser (the WebSocket handshake, Fetch Metadata for ownPagesOnly), never the cookie.
var relayedHeaders = map[string]bool{"Accept": true, "Accept-Language": true, "Connection": true, "Upgrade": true,
	"Content-Type": true, "Last-Event-Id": true, "Sec-Fetch-Site": true, "Sec-Websocket-Key": true,
	"Sec-Websocket-Version": true, "Sec-Websocket-Protocol": true, "User-Agent": true}

// ownerKey carries the Owner a relayed request goes to.
type ownerKey struct{}

// relay relays a store's routes to the store's host.
type relay struct {
	s     *Server
	proxy *httputil.ReverseProxy
	conns *http.Transport // one pool of door connections per host
}

// owned serves a store's route with h when the store's browser is this host's, and relays it to the store's
// host otherwise. A request another host relayed here is never relayed again: the store moved meanwhile.
func (rl *relay) owned(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s := rl.s
		c := s.cfg.Source.Cluster()
		slug := r.PathValue("slug")
		if c == nil || slug == api.WebSlug {
			h(w, r)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), RelayBound)
		owner, elsewhere := c.Owner(ctx, slug)
		cancel()
		_, fromHost := relayOf(r)
		switch {
		case !elsewhere:
			h(w, r)
		case fromHost:
			s.message(w, r, http.StatusConflict, "This store moved to host "+owner.Host,
				"The store's browser is placed on host "+owner.Host+" now, not on this host.",
				"Reload the page: it comes from host "+owner.Host+" then.", "./")
		case !owner.Alive:
			rl.unreachable(w, r, owner, "")
		default:
			rl.proxy.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ownerKey{}, owner)))
		}
	}
}

// newRelay is s's reverse proxy to stores' hosts: one pool of door connections per host, each dialled
// within RelayBound; WebSocket upgrades (the live view) and streams (SSE, flushed as they come) pass through.
func newRelay(s *Server) *relay {
	rl := &relay{s: s}
	rl.conns = &http.Transport{
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			c := s.cfg.Source.Cluster()
			if c == nil {
				return nil, errors.New("this host is not in a cluster")
			}
			ctx, cancel := context.WithTimeout(ctx, RelayBound)
			defer cancel()
			return c.DialUI(ctx, host)
		},
		MaxIdleConnsPerHost: 8, IdleConnTimeout: hostIdle / 2, ResponseHeaderTimeout: relayAnswerWithin,
	}
	rl.proxy = &httputil.ReverseProxy{Transport: rl.conns, Rewrite: rl.toOwner, ModifyResponse: fromOwner,
		ErrorHandler: rl.failed, ErrorLog: stdlog.New(warnWriter{s.cfg.Log}, "", 0)}
	return rl
}

// toOwner makes the relayed request: the route as this host's routes saw it (without the session's path),
// the headers the pages need, and the person as this host knows them; a form the guard read for its token
// goes as it came, without the token.
func (rl *relay) toOwner(pr *httputil.ProxyRequest) {
	owner, _ := pr.In.Context().Value(ownerKey{}).(Owner)
	pr.Out.URL = &url.URL{Scheme: "http", Host: owner.Host, Path: pr.In.URL.Path, RawPath: pr.In.URL.RawPath,
		RawQuery: pr.Out.URL.RawQuery}
	pr.Out.Host = ""
	for k := range pr.Out.Header {
		if !relayedHeaders[k] {
			delete(pr.Out.Header, k)
		}
	}
	pr.Out.Header.Set(hdrBase, sessionBase(pr.In))
	pr.Out.Header.Set(hdrViewer, viewerID(pr.In))
	pr.Out.Header.Set(hdrToken, rl.s.formToken(pr.In))
	if pr.In.PostForm != nil {
		form := url.Values{}
		for k, v := range pr.In.PostForm {
			if k != formTokenField {
				form[k] = v
			}
		}
		body := form.Encode()
		pr.Out.Body, pr.Out.ContentLength, pr.Out.GetBody = io.NopCloser(strings.NewReader(body)), int64(len(body)), nil
		pr.Out.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
}

// fromOwner drops what this host says itself from the store's host's answer: the security headers (the guard
// set them already) and any cookie.
func fromOwner(res *http.Response) error {
	for k := range securityHeaders {
		res.Header.Del(k)
	}
	res.Header.Del("Set-Cookie")
	return nil
}

// failed answers a request the store's host did not answer: the unreachable page, unless the person left
// meanwhile.
func (rl *relay) failed(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return
	}
	owner, _ := r.Context().Value(ownerKey{}).(Owner)
	why := "did not answer: " + err.Error()
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		why = "did not answer at its door within " + duration(RelayBound)
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		why = "closed the connection before answering"
	case errors.Is(err, syscall.ECONNREFUSED):
		why = "refused the connection to its door: nothing listens there"
	}
	rl.s.cfg.Log.Warn().Err(err).Str("host", owner.Host).Str("path", r.URL.Path).Msg("a store's host did not answer a relayed page")
	rl.unreachable(w, r, owner, why)
}

// unreachable tells the person that the store's host cannot show the store now, and what to do: a page, the
// live stream's banner (stream), or a line for a picture or a socket. why is what went wrong
// with an alive host, said of it ("did not answer …"); "" for one whose heartbeat stopped.
func (rl *relay) unreachable(w http.ResponseWriter, r *http.Request, owner Owner, why string) {
	s, host := rl.s, owner.Host
	moves := 10 * time.Second
	if c := s.cfg.Source.Cluster(); c != nil {
		moves = c.MovesAfter()
	}
	silent := "has sent no heartbeat yet"
	if owner.Quiet > 0 {
		silent = "has sent no heartbeat for " + duration(owner.Quiet)
	}
	if why == "" {
		why = silent
	} else {
		why += " (its last heartbeat was " + duration(owner.Quiet) + " ago)"
	}
	store := owner.Store
	if store == "" {
		store = r.PathValue("slug")
	}
	text := "The store " + quote(store) + " runs on host " + host + ", which " + why +
		". Its pages, live view and takeover come from that host, so none of them can be shown now."
	action := "A host silent for " + duration(moves) + " loses its stores: each moves to a live host, and an agent's " +
		"next call starts it there with its newest login; this page then shows it from there. Meanwhile check host " +
		host + ": is its manager running (vibe-browser status there), and can this host reach its door (its " +
		"VIBE_ADVERTISE)? Reload this page to try again."
	if strings.HasPrefix(r.URL.Path, "/live/") {
		rl.stream(w, r, owner, text+" "+action)
		return
	}
	s.message(w, r, http.StatusServiceUnavailable, "Host "+host+" is unreachable", text, action, "./")
}

// unreachableRecheck is how often an open store page whose host is unreachable looks again.
const unreachableRecheck = 2 * time.Second

// stream is a store page's live stream while its host is unreachable: the page's store part with the why in
// its banner, kept open until the host's door answers again or the store moved (then the stream ends, and the
// page's next one is the host's own).
func (rl *relay) stream(w http.ResponseWriter, r *http.Request, owner Owner, msg string) {
	s := rl.s
	flusher, ok := w.(http.Flusher)
	if !ok {
		s.plain(w, http.StatusServiceUnavailable, msg)
		return
	}
	page := storePage{Slug: r.PathValue("slug"), Name: owner.Store, Host: owner.Host, Status: "unreachable", Away: true,
		Error: msg, Clients: []clientRow{}, Downloads: []downloadGroup{}}
	part, err := s.changedParts(liveFeed{page: "store", parts: []string{"store"}, data: func() any { return page }},
		map[string][]byte{})
	if err != nil {
		s.cfg.Log.Error().Err(err).Msg("render the unreachable store part")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, part); err != nil {
		return
	}
	flusher.Flush()
	c := s.cfg.Source.Cluster()
	if c == nil {
		return
	}
	tick := time.NewTicker(unreachableRecheck)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(r.Context(), RelayBound)
		now, elsewhere := c.Owner(ctx, page.Slug)
		back := !elsewhere || now.Host != owner.Host
		if !back && now.Alive {
			if conn, err := c.DialUI(ctx, now.Host); err == nil {
				conn.Close()
				back = true
			}
		}
		cancel()
		if back {
			return
		}
		if _, err := io.WriteString(w, ": unreachable\n\n"); err != nil {
			return
		}
		flusher.Flush()
	}
}
