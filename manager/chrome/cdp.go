package chrome

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
)

// versionInfo is the part of /json/version we use.
type versionInfo struct {
	Browser string `json:"Browser"`
	WS      string `json:"webSocketDebuggerUrl"`
}

// probeTimeout bounds one /json/version request: a live local browser answers in milliseconds.
const probeTimeout = 2 * time.Second

// fetchVersion asks http://127.0.0.1:<port>/json/version for the browser websocket URL.
func fetchVersion(ctx context.Context, port int) (versionInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	u := "http://127.0.0.1:" + strconv.Itoa(port) + "/json/version"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return versionInfo{}, err
	}
	// A fresh transport per probe: no idle keep-alive connections (or their goroutines) outlive the call.
	tr := &http.Transport{DisableKeepAlives: true, Proxy: nil}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return versionInfo{}, fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return versionInfo{}, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	var v versionInfo
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&v); err != nil {
		return versionInfo{}, fmt.Errorf("GET %s: %w", u, err)
	}
	if v.WS == "" {
		return versionInfo{}, fmt.Errorf("GET %s: no webSocketDebuggerUrl", u)
	}
	if _, err := url.Parse(v.WS); err != nil {
		return versionInfo{}, fmt.Errorf("GET %s: webSocketDebuggerUrl: %w", u, err)
	}
	return v, nil
}

// browserClose sends Browser.close over the browser websocket and waits for its answer or for the
// connection to drop (Chromium may close the socket before answering), both within ctx.
func browserClose(ctx context.Context, wsURL string) error {
	d := websocket.Dialer{Proxy: nil, HandshakeTimeout: probeTimeout}
	c, resp, err := d.DialContext(ctx, wsURL, nil)
	if err != nil {
		return fmt.Errorf("dial %s: %w", wsURL, err)
	}
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		c.SetWriteDeadline(dl)
		c.SetReadDeadline(dl)
	}
	// Unblock the read below if ctx ends without a deadline (plain cancellation).
	stop := context.AfterFunc(ctx, func() { c.SetReadDeadline(time.Now()) })
	defer stop()
	if err := c.WriteMessage(websocket.TextMessage, []byte(`{"id":1,"method":"Browser.close"}`)); err != nil {
		return fmt.Errorf("Browser.close: %w", err)
	}
	for {
		_, msg, err := c.ReadMessage()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("Browser.close: %w", ctx.Err())
			}
			return nil // the browser hung up: it is closing
		}
		var r struct {
			ID    int             `json:"id"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal(msg, &r) == nil && r.ID == 1 {
			if len(r.Error) > 0 {
				return fmt.Errorf("Browser.close: %s", r.Error)
			}
			return nil
		}
	}
}
