package forward

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/proxy"

	"vibebrowser/manager/netid"
)

// How an upstream fails, for the error page, doctor and the store's status.
var (
	ErrUnreachable = errors.New("the proxy cannot be reached")
	ErrAuth        = errors.New("the proxy refused the store's credentials")
	ErrRefused     = errors.New("the proxy could not reach the site")
)

// tunnelDialer opens a byte stream to host:port through the upstream: HTTP CONNECT with Proxy-Authorization
// (over TLS to an https proxy), or SOCKS5 with user/password (golang.org/x/net/proxy). Host names go to the
// upstream as they are, so DNS is the upstream's, for socks5 as for socks5h.
type tunnelDialer struct {
	up      netid.Proxy
	timeout time.Duration
}

func newTunnelDialer(up netid.Proxy, timeout time.Duration) *tunnelDialer {
	return &tunnelDialer{up: up, timeout: timeout}
}

// dial opens the tunnel; its error wraps ErrUnreachable, ErrAuth or ErrRefused.
func (d *tunnelDialer) dial(ctx context.Context, target string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, d.timeout) // the whole handshake, not only the TCP connect
	defer cancel()
	if d.up.Scheme == netid.SchemeSOCKS5 || d.up.Scheme == netid.SchemeSOCKS5H {
		return d.dialSOCKS(ctx, target)
	}
	return d.dialConnect(ctx, target)
}

func (d *tunnelDialer) dialProxy(ctx context.Context) (net.Conn, error) {
	nd := net.Dialer{Timeout: d.timeout}
	c, err := nd.DialContext(ctx, "tcp", d.up.Addr())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, cause(err))
	}
	if d.up.Scheme == netid.SchemeHTTPS {
		tc := tls.Client(c, &tls.Config{ServerName: d.up.Host})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("%w: TLS: %v", ErrUnreachable, cause(err))
		}
		c = tc
	}
	return c, nil
}

func (d *tunnelDialer) dialConnect(ctx context.Context, target string) (net.Conn, error) {
	c, err := d.dialProxy(ctx)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if d.up.User != "" {
		req += "Proxy-Authorization: Basic " +
			base64.StdEncoding.EncodeToString([]byte(d.up.User+":"+d.up.Password)) + "\r\n"
	}
	if _, err := c.Write([]byte(req + "\r\n")); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, cause(err))
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: no answer to CONNECT: %v", ErrUnreachable, cause(err))
	}
	// The body is not closed: Close would read a 200's "body", the tunnel itself, to its end.
	switch {
	case resp.StatusCode == http.StatusProxyAuthRequired:
		c.Close()
		return nil, fmt.Errorf("%w (407)", ErrAuth)
	case resp.StatusCode != http.StatusOK:
		c.Close()
		return nil, fmt.Errorf("%w: %s answered CONNECT with %s", ErrRefused, target, resp.Status)
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

func (d *tunnelDialer) dialSOCKS(ctx context.Context, target string) (net.Conn, error) {
	var auth *proxy.Auth
	if d.up.User != "" {
		auth = &proxy.Auth{User: d.up.User, Password: d.up.Password}
	}
	var hs *socksHandshake // the SOCKS dialer's errors do not say which step failed; what the upstream answered does
	forward := dialerFunc(func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{Timeout: d.timeout}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if dl, ok := ctx.Deadline(); ok {
			c.SetDeadline(dl) // the handshake's bound; cleared once it is done
		}
		hs = &socksHandshake{Conn: c}
		return hs, nil
	})
	sd, err := proxy.SOCKS5("tcp", d.up.Addr(), auth, forward)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	c, err := sd.(proxy.ContextDialer).DialContext(ctx, "tcp", target)
	switch {
	case err == nil:
		c.SetDeadline(time.Time{})
		if hs, ok := c.(*socksHandshake); ok {
			c = hs.Conn // the handshake is over: nothing more to watch
		}
		return c, nil
	case hs == nil:
		return nil, fmt.Errorf("%w: %v", ErrUnreachable, cause(err))
	case hs.refusedAuth():
		return nil, fmt.Errorf("%w (SOCKS5)", ErrAuth)
	case isTimeout(err):
		return nil, fmt.Errorf("%w: it answered nothing in time", ErrUnreachable)
	default:
		return nil, fmt.Errorf("%w: %s: %v", ErrRefused, target, cause(err))
	}
}

// socksHandshake is the connection to a SOCKS5 upstream during the handshake: it keeps the upstream's first
// answers, so a failed dial is classified by what the upstream said rather than by the dialer's error text.
type socksHandshake struct {
	net.Conn
	got []byte // the first 4 bytes the upstream sent: method selection (RFC 1928), then the auth status (RFC 1929)
}

func (c *socksHandshake) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if k := min(n, 4-len(c.got)); k > 0 {
		c.got = append(c.got, p[:k]...)
	}
	return n, err
}

// refusedAuth reports whether the upstream refused the credentials: it accepted none of the offered methods
// (0xff), or it failed the user name and password (a non-zero RFC 1929 status).
func (c *socksHandshake) refusedAuth() bool {
	const version, noAcceptable, userPassword = 5, 0xff, 2
	g := c.got
	switch {
	case len(g) >= 2 && g[0] == version && g[1] == noAcceptable:
		return true
	case len(g) >= 4 && g[0] == version && g[1] == userPassword && g[3] != 0:
		return true
	}
	return false
}

// dialerFunc is a proxy.ContextDialer (and proxy.Dialer) made of a function.
type dialerFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func (f dialerFunc) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	return f(ctx, network, addr)
}

func (f dialerFunc) Dial(network, addr string) (net.Conn, error) {
	return f(context.Background(), network, addr)
}

// cause is the innermost error's text of a dial: "connection refused", "i/o timeout".
func cause(err error) error {
	var op *net.OpError
	for errors.As(err, &op) && op.Err != nil {
		err = op.Err
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// classify names a plain request's failure: the tunnel's own (a SOCKS upstream), or net/http's when it
// dialled an HTTP upstream itself (a *net.OpError of Op "proxyconnect"), or its response-header timeout.
func classify(err error) error {
	var op *net.OpError
	switch {
	case errors.Is(err, ErrAuth), errors.Is(err, ErrUnreachable), errors.Is(err, ErrRefused):
		return err
	case errors.As(err, &op) && op.Op == "proxyconnect": // net/http's own dial of an HTTP proxy
		return fmt.Errorf("%w: %v", ErrUnreachable, cause(err))
	case isTimeout(err): // net/http's ResponseHeaderTimeout: the upstream took the request and said nothing
		return fmt.Errorf("%w: it answered nothing in time", ErrUnreachable)
	default:
		return fmt.Errorf("%w: %v", ErrRefused, cause(err))
	}
}

// Check reaches the upstream and authenticates, as doctor does: a tunnel to target (a host:port the check
// may ask for, such as a well-known site's 443). ErrRefused means the proxy took the credentials but could
// not reach target; only ErrUnreachable and ErrAuth say the proxy itself is wrong.
func Check(ctx context.Context, up netid.Proxy, target string, timeout time.Duration) error {
	c, err := newTunnelDialer(up, timeout).dial(ctx, target)
	if err != nil {
		return err
	}
	return c.Close()
}
