package doctor

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"vibebrowser/manager/forward/fakeproxy"
	"vibebrowser/manager/netid"
)

func TestCheckProxy(t *testing.T) {
	ipSite := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "203.0.113.7\n") }))
	defer ipSite.Close()
	_, port, _ := net.SplitHostPort(ipSite.Listener.Addr().String())
	up := fakeproxy.StartHTTP(t, "u", "right-pw", map[string]string{"ip.test": "127.0.0.1"})
	socks := fakeproxy.StartSOCKS5(t, "u", "right-pw", nil)
	down, _ := net.Listen("tcp", "127.0.0.1:0")
	downAddr := down.Addr().String()
	down.Close()
	for _, tc := range []struct {
		name, proxy, checkURL string
		want                  Status
		says                  string
	}{
		{"works", "http://u:right-pw@" + up.Addr, "", OK, "credentials taken"},
		{"socks in a closed network", "socks5://u:right-pw@" + socks.Addr, "", OK, "could not reach example.com:443"},
		{"exit ip", "http://u:right-pw@" + up.Addr, "http://ip.test:" + port + "/", OK, `"203.0.113.7" (the store's exit IP)`},
		{"wrong password", "http://u:wrong-pw@" + up.Addr, "", Fail, "refused the store's credentials"},
		{"socks wrong password", "socks5h://u:wrong-pw@" + socks.Addr, "", Fail, "refused the store's credentials"},
		{"down", "http://u:right-pw@" + downAddr, "", Fail, "cannot be reached"},
		{"check url unreachable", "http://u:right-pw@" + up.Addr, "http://nowhere.test/", Warn, "could not reach the site"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := netid.ParseProxy(tc.proxy)
			if err != nil {
				t.Fatal(err)
			}
			c := checkProxy(context.Background(), "proxy:s", "s", p, tc.checkURL)
			if c.Status != tc.want || !strings.Contains(c.Detail, tc.says) || strings.Contains(c.Detail+c.Fix, "-pw") {
				t.Errorf("checkProxy = %+v; want %s saying %q, never the password", c, tc.want, tc.says)
			}
		})
	}
}
