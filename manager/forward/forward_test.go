package forward

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/forward/fakeproxy"
	"vibebrowser/manager/netid"
)

const secret = "hunter2-pw"

// sites are a plain and a TLS site, known to the proxies as shop.test.
func sites(t *testing.T) (plain, tlsSite *httptest.Server) {
	t.Helper()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintf(w, "hello %s%s", r.Host, r.URL.Path) })
	plain, tlsSite = httptest.NewServer(h), httptest.NewTLSServer(h)
	t.Cleanup(plain.Close)
	t.Cleanup(tlsSite.Close)
	return plain, tlsSite
}

// reported is the last upstream health a forwarder told its OnChange (nil: working, or nothing told yet).
type reported struct {
	mu   sync.Mutex
	last error
}

func (r *reported) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// startForwarder serves a forwarder for up and returns its proxy URL and what it reports of its upstream.
func startForwarder(t *testing.T, up string, tune func(*Config)) (*reported, *url.URL) {
	t.Helper()
	p, err := netid.ParseProxy(up)
	if err != nil {
		t.Fatal(err)
	}
	rep := &reported{}
	cfg := Config{Upstream: p, Store: "Acme Shop", AllowUID: -1, Log: zerolog.Nop(),
		OnChange: func(err error) { rep.mu.Lock(); rep.last = err; rep.mu.Unlock() }}
	if tune != nil {
		tune(&cfg)
	}
	f := New(cfg)
	ln := listen(t)
	go f.Serve(ln)
	t.Cleanup(func() { f.Close() })
	u, _ := url.Parse("http://" + ln.Addr().String())
	return rep, u
}

// through fetches target with the forwarder as the client's proxy, as Chromium's --proxy-server does.
func through(t *testing.T, fwd *url.URL, target string) (int, string) {
	t.Helper()
	tr := &http.Transport{Proxy: http.ProxyURL(fwd), TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(target)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func portOf(s *httptest.Server) string { return s.URL[strings.LastIndex(s.URL, ":")+1:] }

func TestForwarderThroughEachUpstream(t *testing.T) {
	plain, tlsSite := sites(t)
	hosts := map[string]string{"shop.test": "127.0.0.1"}
	for _, kind := range []string{"http", "socks5", "socks5h"} {
		t.Run(kind, func(t *testing.T) {
			var up *fakeproxy.Proxy
			if kind == "http" {
				up = fakeproxy.StartHTTP(t, "alice", secret, hosts)
			} else {
				up = fakeproxy.StartSOCKS5(t, "alice", secret, hosts)
			}
			f, fwd := startForwarder(t, kind+"://alice:"+secret+"@"+up.Addr, nil)
			for _, target := range []string{"http://shop.test:" + portOf(plain) + "/plain", "https://shop.test:" + portOf(tlsSite) + "/tls"} {
				code, body := through(t, fwd, target)
				if code != 200 || !strings.HasPrefix(body, "hello shop.test:") {
					t.Errorf("%s through %s = %d %q; want the site's page", target, kind, code, body)
				}
			}
			if got := up.Targets(); len(got) != 2 || !slices.Contains(got, "shop.test:"+portOf(tlsSite)) {
				t.Errorf("the upstream was asked for %q; want both targets by name (DNS at the proxy)", got)
			}
			if err := f.get(); err != nil {
				t.Errorf("the upstream reported after good loads = %v", err)
			}
			if err := Check(context.Background(), mustProxy(t, kind+"://alice:"+secret+"@"+up.Addr), "shop.test:"+portOf(tlsSite), time.Second); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

func mustProxy(t *testing.T, s string) netid.Proxy {
	t.Helper()
	p, err := netid.ParseProxy(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestForwarderErrorPages(t *testing.T) {
	plain, tlsSite := sites(t)
	hosts := map[string]string{"shop.test": "127.0.0.1"}
	httpUp := fakeproxy.StartHTTP(t, "alice", secret, hosts)
	socksUp := fakeproxy.StartSOCKS5(t, "alice", secret, hosts)
	down := listen(t)
	downAddr := down.Addr().String()
	down.Close() // nothing listens there now
	mute := listen(t)
	go func() { // accepts and never answers; its connections end with the test binary
		var held []net.Conn
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	for _, tc := range []struct {
		name, up string
		want     error
	}{
		{"http wrong password", "http://alice:wrong-" + secret + "@" + httpUp.Addr, ErrAuth},
		{"socks wrong password", "socks5://alice:wrong-" + secret + "@" + socksUp.Addr, ErrAuth},
		{"http down", "http://alice:" + secret + "@" + downAddr, ErrUnreachable},
		{"socks down", "socks5h://alice:" + secret + "@" + downAddr, ErrUnreachable},
		{"http mute", "http://alice:" + secret + "@" + mute.Addr().String(), ErrUnreachable},
		{"socks mute", "socks5://alice:" + secret + "@" + mute.Addr().String(), ErrUnreachable},
		{"unknown site", "http://alice:" + secret + "@" + httpUp.Addr, ErrRefused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, fwd := startForwarder(t, tc.up, func(c *Config) { c.DialTimeout, c.IdleTimeout = 500*time.Millisecond, time.Second })
			host := "shop.test"
			if tc.want == ErrRefused {
				host = "nowhere.test"
			}
			code, body := through(t, fwd, "http://"+host+":"+portOf(plain)+"/x")
			body = html.UnescapeString(body)
			if tc.want == ErrRefused { // the upstream's own answer, passed on as it is
				if code != http.StatusBadGateway || body != "no such host\n" {
					t.Errorf("a page of an unknown site = %d %q; want the proxy's own 502", code, body)
				}
			} else if code != http.StatusBadGateway || !strings.Contains(body, "Acme Shop") ||
				!strings.Contains(body, strings.TrimPrefix(tc.up[strings.LastIndex(tc.up, "@"):], "@")) ||
				!strings.Contains(body, tc.want.Error()) || strings.Contains(body, secret) {
				t.Errorf("a page through %s = %d %q; want 502 naming the store, the proxy's host and %q, never the password",
					tc.name, code, body, tc.want)
			}
			code, body = through(t, fwd, "https://"+host+":"+portOf(tlsSite)+"/x")
			if code == 200 {
				t.Errorf("an https page through %s loaded: %q", tc.name, body)
			}
			if wantHealth := health(tc.want); tc.want == ErrRefused && f.get() != nil ||
				tc.want != ErrRefused && !errors.Is(f.get(), wantHealth) {
				t.Errorf("the upstream reported %v; want %v (a site the proxy cannot reach is no failure of the proxy)", f.get(), wantHealth)
			}
			if err := Check(context.Background(), mustProxy(t, tc.up), host+":"+portOf(tlsSite), 500*time.Millisecond); !errors.Is(err, tc.want) || strings.Contains(err.Error(), secret) {
				t.Errorf("Check = %v; want %v without the password", err, tc.want)
			}
		})
	}
}

func TestForwarderServesOnlyTheBrowsersUser(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the socket owner is read from /proc/net/tcp")
	}
	plain, _ := sites(t)
	up := fakeproxy.StartHTTP(t, "alice", secret, map[string]string{"shop.test": "127.0.0.1"})
	target := "http://shop.test:" + portOf(plain) + "/x"
	_, mine := startForwarder(t, "http://alice:"+secret+"@"+up.Addr, func(c *Config) { c.AllowUID = os.Getuid() })
	if code, body := through(t, mine, target); code != 200 {
		t.Errorf("through a forwarder for this uid = %d %q; want the page", code, body)
	}
	_, other := startForwarder(t, "http://alice:"+secret+"@"+up.Addr, func(c *Config) { c.AllowUID = os.Getuid() + 4242 })
	if code, body := through(t, other, target); code == 200 {
		t.Errorf("a forwarder for another uid served this one: %q", body)
	}
}

func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}
