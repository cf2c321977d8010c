// Package forward is a store's proxy forwarder (SPEC §16): an HTTP proxy on loopback for the store's
// Chromium that dials the store's upstream proxy with its credentials, so they never reach Chromium's command
// line and its authentication prompt never reaches an agent's tab.
package forward

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/netid"
)

// Bounds of a forwarded connection.
const (
	DefaultDialTimeout = 15 * time.Second // reaching the upstream and its answer to CONNECT or SOCKS
	DefaultIdleTimeout = 5 * time.Minute  // a tunnel with no byte either way
)

// Config is one store's forwarder.
type Config struct {
	Upstream netid.Proxy
	Store    string // the store's name, for the error page and the log
	// AllowUID, when not negative, is the only uid whose sockets the forwarder serves (Linux: the owner
	// column of /proc/net/tcp); others are closed unanswered. Elsewhere it is not checked.
	AllowUID    int
	DialTimeout time.Duration // 0: DefaultDialTimeout
	IdleTimeout time.Duration // 0: DefaultIdleTimeout
	Log         zerolog.Logger
	// OnChange, when set, is told each change of the upstream's health: its failure, or nil once a
	// connection went through again. It runs on the connection's goroutine, one call at a time.
	OnChange func(err error)
}

// Forwarder serves Config on one listener until Close.
type Forwarder struct {
	cfg       Config
	tunnel    *tunnelDialer
	transport *http.Transport
	srv       *http.Server

	mu      sync.Mutex
	lastErr error // mu guards lastErr: the upstream's last failure, nil once a connection went through again
}

// New makes the forwarder of cfg; Serve runs it.
func New(cfg Config) *Forwarder {
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	f := &Forwarder{cfg: cfg, tunnel: newTunnelDialer(cfg.Upstream, cfg.DialTimeout)}
	// Plain requests: to an HTTP proxy in absolute form with its Proxy-Authorization, as a proxy expects
	// them (many refuse CONNECT to port 80); over a SOCKS proxy through the tunnel, whose handshake is bounded.
	dial := (&net.Dialer{Timeout: cfg.DialTimeout}).DialContext
	var via func(*http.Request) (*url.URL, error)
	if cfg.Upstream.Scheme == netid.SchemeSOCKS5 || cfg.Upstream.Scheme == netid.SchemeSOCKS5H {
		dial = func(ctx context.Context, _, addr string) (net.Conn, error) { return f.tunnel.dial(ctx, addr) }
	} else {
		upstream, _ := url.Parse(cfg.Upstream.String()) // a netid.Proxy always reads back
		via = http.ProxyURL(upstream)
	}
	f.transport = &http.Transport{
		Proxy:                 via,
		DialContext:           dial,
		TLSHandshakeTimeout:   cfg.DialTimeout,
		ResponseHeaderTimeout: cfg.IdleTimeout,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConnsPerHost:   8,
	}
	f.srv = &http.Server{Handler: f, ReadHeaderTimeout: cfg.DialTimeout}
	return f
}

// Serve answers Chromium on ln until Close; connections of another uid than AllowUID are closed at once.
func (f *Forwarder) Serve(ln net.Listener) error {
	err := f.srv.Serve(&ownerListener{Listener: ln, uid: f.cfg.AllowUID, log: f.cfg.Log})
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Close stops serving and closes every connection, tunnels included.
func (f *Forwarder) Close() error {
	f.transport.CloseIdleConnections()
	return f.srv.Close()
}

// note records how a connection through the upstream went. A site the upstream could not reach says
// nothing of the upstream itself (it took the credentials and tried): only ErrUnreachable and ErrAuth are
// its failures, and only a change between those and health is logged and told.
func (f *Forwarder) note(err error) {
	if errors.Is(err, ErrRefused) {
		err = nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	changed := health(err) != health(f.lastErr)
	f.lastErr = err
	if changed && f.cfg.OnChange != nil {
		f.cfg.OnChange(err)
	}
	if changed && err != nil {
		f.cfg.Log.Warn().Str("store", f.cfg.Store).Str("proxy", f.cfg.Upstream.Addr()).Err(err).Msg("upstream proxy failed")
	} else if changed {
		f.cfg.Log.Info().Str("store", f.cfg.Store).Str("proxy", f.cfg.Upstream.Addr()).Msg("upstream proxy works again")
	}
}

// health is an upstream's state for note: working, unreachable or refusing the credentials.
func health(err error) error {
	switch {
	case errors.Is(err, ErrAuth):
		return ErrAuth
	case err != nil:
		return ErrUnreachable
	}
	return nil
}

// ServeHTTP is the proxy: CONNECT becomes a tunnel through the upstream, any other request with an absolute
// URL is sent on through it. A request for the forwarder itself is refused.
func (f *Forwarder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		f.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || (r.URL.Scheme != "http" && r.URL.Scheme != "https") {
		http.Error(w, "this is a store's proxy forwarder: it takes proxy requests only", http.StatusBadRequest)
		return
	}
	out := r.Clone(r.Context())
	out.RequestURI = ""
	removeHopHeaders(out.Header)
	resp, err := f.transport.RoundTrip(out)
	if err == nil && resp.StatusCode == http.StatusProxyAuthRequired {
		resp.Body.Close()
		err = fmt.Errorf("%w (407 from the proxy)", ErrAuth)
	}
	if err != nil {
		err = classify(err)
		f.note(err)
		f.errorPage(w, r.URL.Host, err)
		return
	}
	f.note(nil)
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(flushWriter{w}, resp.Body)
}

// connect opens a tunnel to the request's host through the upstream and splices it to Chromium.
func (f *Forwarder) connect(w http.ResponseWriter, r *http.Request) {
	up, err := f.tunnel.dial(r.Context(), r.Host)
	if err != nil {
		f.note(err)
		f.errorPage(w, r.Host, err)
		return
	}
	f.note(nil)
	hj, ok := w.(http.Hijacker)
	if !ok {
		up.Close()
		http.Error(w, "cannot tunnel on this connection", http.StatusInternalServerError)
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		up.Close()
		down.Close()
		return
	}
	splice(&bufferedConn{Conn: down, r: rw.Reader}, up, f.cfg.IdleTimeout)
}

var errorPageTemplate = template.Must(template.New("e").Parse(`<!doctype html>
<meta charset="utf-8"><title>Proxy error: {{.Store}}</title>
<body style="font: 16px/1.5 system-ui, sans-serif; max-width: 44em; margin: 3em auto; padding: 0 1em">
<h1 style="font-size: 1.4em">The store's proxy did not get this page through</h1>
<p>Store <b>{{.Store}}</b> goes out through its proxy <b>{{.Proxy}}</b>, which failed for <b>{{.Target}}</b>:</p>
<p style="background: #fdecea; padding: .6em 1em; border-radius: 4px">{{.Problem}}</p>
<p>{{.Fix}}</p>
</body>
`))

// errorPage answers 502 with a page naming the store, the proxy's host and the problem, never its password.
func (f *Forwarder) errorPage(w http.ResponseWriter, target string, err error) {
	fix := "Check the proxy's address and that it is up (vibe-browser doctor tries it), or change it: " +
		"vibe-browser store set STORE --proxy URL."
	if errors.Is(err, ErrAuth) {
		fix = "The proxy refused the store's user name and password: set the right ones with " +
			"vibe-browser store set STORE --proxy scheme://user:password@host:port."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusBadGateway)
	errorPageTemplate.Execute(w, map[string]string{"Store": f.cfg.Store, "Proxy": f.cfg.Upstream.Addr(),
		"Target": target, "Problem": err.Error(), "Fix": fix})
}

// hopHeaders are a proxy hop's own (RFC 9110 §7.6.1), never passed on.
var hopHeaders = []string{"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

func removeHopHeaders(h http.Header) {
	for _, name := range strings.Split(h.Get("Connection"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			h.Del(name)
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// flushWriter flushes after every write, so a streamed response reaches Chromium as it comes.
type flushWriter struct{ w http.ResponseWriter }

func (fw flushWriter) Write(p []byte) (int, error) {
	n, err := fw.w.Write(p)
	if fl, ok := fw.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// bufferedConn reads what the server's reader already holds before the connection itself.
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
