package forward

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"vibebrowser/manager/netid"
)

// ExitIP fetches checkURL (a what-is-my-IP service, VIBE_PROXY_CHECK_URL) through the upstream and returns
// the start of its answer: the address the store's traffic leaves from. Its errors never hold the password.
func ExitIP(ctx context.Context, up netid.Proxy, checkURL string, timeout time.Duration) (string, error) {
	proxyURL, _ := url.Parse(up.String()) // a netid.Proxy always reads back
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), TLSHandshakeTimeout: timeout}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, checkURL, nil)
	if err != nil {
		return "", err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		msg := err.Error()
		if up.Password != "" {
			msg = strings.ReplaceAll(msg, up.Password, "***") // net/http may quote the proxy's URL
		}
		return "", errors.New(msg)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s", checkURL, resp.Status)
	}
	return strings.TrimSpace(string(b)), nil
}
