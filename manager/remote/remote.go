// Package remote is the remote-endpoint backend (a store's "cdp" backend): a browser someone else runs, reached at
// its CDP endpoint.
package remote

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"vibebrowser/mux/cdpwire"
	"vibebrowser/mux/errdefs"
)

// ValidateURL accepts http(s):// and ws(s):// URLs with a host; any other is an error of class
// errdefs.ErrInvalid whose text says what is wrong and names no class, so a caller that wraps it in its own
// class reads as before.
func ValidateURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errdefs.Invalid("cdp url %q: want http://host:port or ws://host:port/devtools/browser/<id>", raw)
	}
	switch u.Scheme {
	case "http", "https", "ws", "wss":
		return nil
	}
	return errdefs.Invalid("cdp url %q: the scheme must be http, https, ws or wss", raw)
}

// Endpoint is the cdp backend's browser: an endpoint someone else runs. Connecting checks that it answers;
// stopping only disconnects. Its methods are safe for concurrent use.
type Endpoint struct {
	url  string
	done chan struct{}
	once sync.Once
}

// Connect checks that endpoint answers CDP discovery (an http(s) URL whose /json/version names a browser
// websocket) or is a ws(s) URL, which the mux dials itself: nothing is requested then. ctx bounds the check.
func Connect(ctx context.Context, endpoint string) (*Endpoint, error) {
	if err := ValidateURL(endpoint); err != nil {
		return nil, err
	}
	if strings.HasPrefix(endpoint, "http") {
		if _, err := cdpwire.FetchVersion(ctx, endpoint); err != nil {
			var se *cdpwire.StatusError
			if errors.As(err, &se) {
				return nil, fmt.Errorf("cdp endpoint %s answered /json/version with %s", endpoint, se.Status)
			}
			return nil, fmt.Errorf("cdp endpoint %s does not answer: %w", endpoint, err)
		}
	}
	return &Endpoint{url: endpoint, done: make(chan struct{})}, nil
}

// PID returns 0: the manager runs no process for a remote browser.
func (e *Endpoint) PID() int { return 0 }

// StartTime returns 0: the manager runs no process for a remote browser.
func (e *Endpoint) StartTime() int64 { return 0 }

// Endpoint returns the endpoint as given to Connect (an http(s) or a ws(s) URL).
func (e *Endpoint) Endpoint() string { return e.url }

// Adopted returns true: a remote browser is never ours to clean up, so no orphan-tab sweep runs on it.
func (e *Endpoint) Adopted() bool { return true }

// Done is closed by Stop only: there is no process here to watch.
func (e *Endpoint) Done() <-chan struct{} { return e.done }

// Stop disconnects: it closes Done and leaves the browser running. Safe to call more than once.
func (e *Endpoint) Stop(context.Context) error {
	e.once.Do(func() { close(e.done) })
	return nil
}

// Release does nothing: there is no watcher to stop, and the browser is never ours to stop.
func (e *Endpoint) Release() {}
