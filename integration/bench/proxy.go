package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"vibebrowser/manager/chrome"
	"vibebrowser/manager/forward/fakeproxy"
)

// proxyLoads is how many page loads each browser makes, taking turns.
const proxyLoads = 200

// benchProxy is SPEC §8's "A proxied store": a page load through the store's forwarder (in its keeper, with
// the upstream's credentials) against a Chromium pointed straight at the same test proxy without them.
func benchProxy(ctx context.Context, env *benchEnv) ([]Row, error) {
	if env.chromium == "" {
		return []Row{{Group: "proxy", Name: "proxy rows skipped: no Chromium installed"}}, nil
	}
	page := strings.Repeat("<p>a line of the page, as a shop's listing has many</p>\n", 400) // about 22 KB
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<!doctype html><title>shop</title>", page)
	}))
	defer site.Close()
	_, port, _ := net.SplitHostPort(site.Listener.Addr().String())
	hosts := map[string]string{"shop.test": "127.0.0.1"}
	withAuth, err := fakeproxy.NewHTTP("bench", "bench-pw", hosts)
	if err != nil {
		return nil, err
	}
	defer withAuth.Close()
	open, err := fakeproxy.NewHTTP("", "", hosts)
	if err != nil {
		return nil, err
	}
	defer open.Close()

	straight, err := benchLaunchChromium(env.chromium, "--proxy-server=http://"+open.Addr, "--proxy-bypass-list=<-loopback>")
	if err != nil {
		return nil, err
	}
	defer straight.stop()
	fwdPort, err := freePort()
	if err != nil {
		return nil, err
	}
	kept, err := chrome.Launch(ctx, chrome.Options{
		Binary: env.chromium, ProfileDir: filepath.Join(env.tmp, "proxy-profile"), Headless: true,
		NoSandbox: os.Geteuid() == 0, Keeper: []string{env.vibe, "keep"}, RunDir: env.tmp, Key: "proxy",
		Identity: chrome.Identity{Proxy: "http://bench:bench-pw@" + withAuth.Addr, ForwardPort: fwdPort, Store: "bench"},
		Log:      zerolog.Nop(),
	})
	if err != nil {
		return nil, fmt.Errorf("chromium behind the forwarder: %w", err)
	}
	defer kept.Stop(context.Background())
	_, keptURL, stopMux, err := benchStartMux(kept.Endpoint())
	if err != nil {
		return nil, err
	}
	defer stopMux()

	names := []string{"straight to the proxy", "through the forwarder"}
	clients := make([]*benchClient, 2)
	for i, u := range []string{straight.ws, keptURL + "/client-bench"} {
		c, err := benchDial(u)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		defer c.close()
		// The tab shows the site itself, so each load's frame is of its origin and can be read.
		if err := c.prepareWith(map[string]any{"url": "http://shop.test:" + port + "/"}); err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		if err := waitLoaded(ctx, c); err != nil {
			return nil, fmt.Errorf("%s: %w", names[i], err)
		}
		clients[i] = c
	}
	samples := make([][]time.Duration, 2)
	for n := range proxyLoads + 10 { // the first ten warm both up: connections to the proxies, caches
		for i, c := range clients {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			url := "http://shop.test:" + port + "/p" + strconv.Itoa(n)
			began := time.Now()
			if err := loadInFrame(c, url); err != nil {
				return nil, fmt.Errorf("%s: load %s: %w", names[i], url, err)
			}
			if n >= 10 {
				samples[i] = append(samples[i], time.Since(began))
			}
		}
	}
	var rows []Row
	p50 := make([]time.Duration, 2)
	for i, name := range names {
		a, b, c := percentiles(samples[i])
		p50[i] = a
		rows = append(rows, Row{Group: "proxy", Name: "page load " + name, P50: a, P95: b, P99: c, OK: true})
	}
	r := float64(p50[1]) / float64(p50[0])
	return append(rows, Row{Group: "proxy", Name: "page load through the forwarder/straight p50", Value: r,
		Unit: "x straight", Budget: "<= 1.1x straight", OK: r <= 1.1}), nil
}

// loadInFrame loads url as a page (a fresh frame of the client's tab, its document and its load event) and
// returns once it has loaded.
func loadInFrame(c *benchClient, url string) error {
	res, err := c.call("Runtime.evaluate", map[string]any{"awaitPromise": true, "returnByValue": true,
		"expression": `new Promise((ok, fail) => { const f = document.createElement("iframe");
			f.onload = () => { const n = f.contentDocument ? f.contentDocument.body.children.length : -1; f.remove(); ok(n) };
			f.onerror = fail; f.src = ` + strconv.Quote(url) + `; document.body.appendChild(f) })`})
	if err != nil {
		return err
	}
	if !strings.Contains(string(res), `"value":400`) {
		return fmt.Errorf("the frame did not show the page: %.200s", res)
	}
	return nil
}

// waitLoaded waits until the client's tab has loaded the site.
func waitLoaded(ctx context.Context, c *benchClient) error {
	return waitUntil(ctx, 20*time.Second, func() bool {
		res, err := c.call("Runtime.evaluate", map[string]any{"returnByValue": true,
			"expression": `document.readyState === "complete" && location.host.startsWith("shop.test")`})
		return err == nil && strings.Contains(string(res), `"value":true`)
	})
}

// freePort is a loopback port free a moment ago, for the forwarder.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
