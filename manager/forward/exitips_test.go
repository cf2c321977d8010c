package forward

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"vibebrowser/manager/forward/fakeproxy"
	"vibebrowser/manager/netid"
)

// TestExitIPs: a store's exit IP is fetched through its proxy in the background, kept while fresh, and
// checked afresh through a new proxy; none without a check URL.
func TestExitIPs(t *testing.T) {
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "192.0.2.44\n") }))
	defer site.Close()
	_, port, _ := net.SplitHostPort(site.Listener.Addr().String())
	good := fakeproxy.StartHTTP(t, "u", "pw", map[string]string{"ip.test": "127.0.0.1"})
	other := fakeproxy.StartSOCKS5(t, "u", "pw", map[string]string{"ip.test": "127.0.0.1"})
	e := &ExitIPs{ctx: context.Background(), url: "http://ip.test:" + port + "/", seen: map[string]exitIP{}}
	through := func(p netid.Proxy) string {
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if ip := e.Of("s1", p); ip != "" {
				return ip
			}
			time.Sleep(20 * time.Millisecond)
		}
		return ""
	}
	p1, _ := netid.ParseProxy("http://u:pw@" + good.Addr)
	if ip := through(p1); ip != "192.0.2.44" {
		t.Fatalf("exit IP through the HTTP proxy = %q; want what the check URL answers", ip)
	}
	asked := len(good.Targets())
	e.Of("s1", p1)
	if n := len(good.Targets()); n != asked {
		t.Errorf("a fresh exit IP was checked again (%d → %d)", asked, n)
	}
	p2, _ := netid.ParseProxy("socks5://u:pw@" + other.Addr)
	if ip := through(p2); ip != "192.0.2.44" || len(other.Targets()) == 0 {
		t.Errorf("after the proxy changed: %q, the new proxy asked %d times; want it checked through the new one", ip, len(other.Targets()))
	}
	off := &ExitIPs{ctx: context.Background(), seen: map[string]exitIP{}}
	if ip := off.Of("s1", p1); ip != "" {
		t.Errorf("without a check URL: %q", ip)
	}
}
