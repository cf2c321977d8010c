package doctor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"vibebrowser/manager/browsers"
	"vibebrowser/manager/forward"
	"vibebrowser/manager/netid"
	"vibebrowser/state"
)

// proxyTimeout bounds each store's proxy check.
const proxyTimeout = 10 * time.Second

// proxyProbe is the tunnel the check asks a proxy for when VIBE_PROXY_CHECK_URL names none: a proxy that
// takes the store's credentials and cannot reach it (a closed network) still passes.
const proxyProbe = "example.com:443"

// proxies tries, for each chrome store with a proxy (SPEC §16), to reach its upstream and authenticate; with
// VIBE_PROXY_CHECK_URL set it also fetches that URL through the proxy and reports what it answers (a
// what-is-my-IP service answers the store's exit IP).
func (m *machine) proxies(ctx context.Context) []Check {
	var checks []Check
	for _, s := range m.storesOf(state.BackendChrome) {
		opts, err := browsers.DecodeOptions(s)
		if err != nil || opts.Proxy == "" {
			continue
		}
		name := "proxy:" + s.Slug
		p, err := netid.ParseProxy(opts.Proxy)
		if err != nil {
			checks = append(checks, fail(name, err.Error(), "vibe-browser store set "+s.Slug+" --proxy URL"))
			continue
		}
		checks = append(checks, checkProxy(ctx, name, s.Slug, p, m.o.Getenv("VIBE_PROXY_CHECK_URL")))
	}
	return checks
}

func checkProxy(ctx context.Context, name, slug string, p netid.Proxy, checkURL string) Check {
	target := proxyProbe
	if u, err := url.Parse(checkURL); err == nil && u.Host != "" {
		port := u.Port()
		if port == "" {
			port = "443"
			if u.Scheme == "http" {
				port = "80"
			}
		}
		target = net.JoinHostPort(u.Hostname(), port)
	}
	err := forward.Check(ctx, p, target, proxyTimeout)
	switch {
	case errors.Is(err, forward.ErrAuth):
		return fail(name, fmt.Sprintf("%s: %v", p.Redacted(), err),
			"set the right user and password: vibe-browser store set "+slug+" --proxy - (the URL on stdin)")
	case errors.Is(err, forward.ErrUnreachable):
		return fail(name, fmt.Sprintf("%s: %v", p.Redacted(), err),
			"check that the proxy runs and this machine reaches "+p.Addr()+", or change it: vibe-browser store set "+slug+" --proxy URL")
	case checkURL == "" && errors.Is(err, forward.ErrRefused):
		return ok(name, fmt.Sprintf("%s reached, the store's credentials taken (it could not reach %s from here: %v)",
			p.Redacted(), target, err))
	case err != nil:
		return warn(name, fmt.Sprintf("%s: %v", p.Redacted(), err), "check VIBE_PROXY_CHECK_URL and the proxy's own access rules")
	case checkURL == "":
		return ok(name, p.Redacted()+" reached, the store's credentials taken")
	}
	exit, err := forward.ExitIP(ctx, p, checkURL, proxyTimeout)
	if err != nil {
		return warn(name, fmt.Sprintf("%s works, but %s through it failed: %v", p.Redacted(), checkURL, err),
			"check VIBE_PROXY_CHECK_URL")
	}
	return ok(name, fmt.Sprintf("%s works; %s answers %q (the store's exit IP)", p.Redacted(), checkURL, exit))
}
