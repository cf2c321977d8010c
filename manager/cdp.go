package manager

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
)

// cdpRunner is the cdp backend's "browser": an endpoint someone else runs. Starting checks that it answers;
// stopping only disconnects.
type cdpRunner struct {
	endpoint string
	done     chan struct{}
	once     sync.Once
}

// connectCDP checks that the endpoint answers CDP discovery (http) or is a ws:// URL the mux dials itself.
func connectCDP(ctx context.Context, endpoint string) (*cdpRunner, error) {
	if err := validCDPURL(endpoint); err != nil {
		return nil, err
	}
	if strings.HasPrefix(endpoint, "http") {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(endpoint, "/")+"/json/version", nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, fmt.Errorf("cdp endpoint %s does not answer: %w", endpoint, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("cdp endpoint %s answered /json/version with %s", endpoint, resp.Status)
		}
	}
	return &cdpRunner{endpoint: endpoint, done: make(chan struct{})}, nil
}

// validCDPURL accepts http(s):// and ws(s):// URLs with a host.
func validCDPURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("%w: cdp url %q: want http://host:port or ws://host:port/devtools/browser/<id>", ErrBadRequest, raw)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
		return nil
	}
	return fmt.Errorf("%w: cdp url %q: the scheme must be http, https, ws or wss", ErrBadRequest, raw)
}

func (c *cdpRunner) PID() int              { return 0 }
func (c *cdpRunner) StartTime() int64      { return 0 }
func (c *cdpRunner) HTTPEndpoint() string  { return c.endpoint }
func (c *cdpRunner) Adopted() bool         { return true } // never ours to clean up: no orphan-tab sweep on a remote browser
func (c *cdpRunner) Done() <-chan struct{} { return c.done }
func (c *cdpRunner) Release()              {}
func (c *cdpRunner) Stop(context.Context) error {
	c.once.Do(func() { close(c.done) })
	return nil
}
