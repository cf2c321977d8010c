package chrome

import (
	"context"
	"errors"
	"strconv"
	"time"

	"vibebrowser/mux/cdpwire"
)

// probeTimeout bounds one /json/version request: a live local browser answers in milliseconds.
const probeTimeout = 2 * time.Second

// fetchVersion asks http://127.0.0.1:<port>/json/version for the browser websocket URL.
func fetchVersion(ctx context.Context, port int) (cdpwire.Version, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	return cdpwire.FetchVersion(ctx, "http://127.0.0.1:"+strconv.Itoa(port))
}

// browserClose sends Browser.close over the browser websocket and waits for its answer or for the
// connection to drop (Chromium may close the socket before answering), both within ctx.
func browserClose(ctx context.Context, wsURL string) error {
	_, err := cdpwire.Call(ctx, wsURL, "Browser.close", nil)
	if errors.Is(err, cdpwire.ErrClosed) {
		return nil // the browser hung up: it is closing
	}
	return err
}
