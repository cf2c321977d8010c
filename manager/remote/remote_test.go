package remote

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"vibebrowser/mux/errdefs"
)

// browser serves /json/version as a browser would, or status when it is not 200, and counts requests.
func browser(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if status != http.StatusOK || r.URL.Path != "/json/version" {
			http.Error(w, "no", status)
			return
		}
		w.Write([]byte(`{"Browser":"Chrome/140.0","webSocketDebuggerUrl":"ws://` + r.Host + `/devtools/browser/x"}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

func TestConnect(t *testing.T) {
	up, upHits := browser(t, http.StatusOK)
	down, _ := browser(t, http.StatusNotFound)
	dead := deadURL(t)
	wsHost := strings.TrimPrefix(up.URL, "http://")
	tests := []struct {
		name     string
		endpoint string
		wantHits int32  // requests the answering browser sees
		wantErr  string // empty: connected
	}{
		{name: "http answering", endpoint: up.URL, wantHits: 1},
		{name: "http answering, trailing slash", endpoint: up.URL + "/", wantHits: 1},
		{name: "ws without a request", endpoint: "ws://" + wsHost + "/devtools/browser/x"},
		{name: "http not answering", endpoint: dead, wantErr: "cdp endpoint " + dead + " does not answer: GET " + dead + "/json/version: "},
		{name: "http non-200", endpoint: down.URL, wantErr: "cdp endpoint " + down.URL + " answered /json/version with 404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upHits.Store(0)
			e, err := Connect(context.Background(), tt.endpoint)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || errors.Is(err, errdefs.ErrInvalid) {
					t.Fatalf("Connect(%q) = %v; want an error starting %q, not errdefs.ErrInvalid", tt.endpoint, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Connect(%q): %v", tt.endpoint, err)
			}
			if got := upHits.Load(); got != tt.wantHits {
				t.Errorf("Connect(%q) made %d request(s); want %d", tt.endpoint, got, tt.wantHits)
			}
			if e.Endpoint() != tt.endpoint || e.PID() != 0 || e.StartTime() != 0 || !e.Adopted() {
				t.Errorf("Connect(%q) = {endpoint %q pid %d start %d adopted %v}; want the endpoint, 0, 0, adopted",
					tt.endpoint, e.Endpoint(), e.PID(), e.StartTime(), e.Adopted())
			}
			select {
			case <-e.Done():
				t.Fatalf("Connect(%q): Done closed before Stop", tt.endpoint)
			default:
			}
			e.Release()
			for range 2 {
				if err := e.Stop(context.Background()); err != nil {
					t.Fatalf("Stop: %v", err)
				}
			}
			<-e.Done()
		})
	}
}

func TestValidateURL(t *testing.T) {
	const want = "want http://host:port or ws://host:port/devtools/browser/<id>"
	const scheme = "the scheme must be http, https, ws or wss"
	tests := []struct {
		raw  string
		want string // the error's text after `cdp url "<raw>": `; empty: valid
	}{
		{raw: "http://127.0.0.1:9222"},
		{raw: "https://fleet.example/b/1/"},
		{raw: "ws://127.0.0.1:9222/devtools/browser/abc"},
		{raw: "wss://fleet.example/devtools/browser/abc"},
		{raw: "", want: want},
		{raw: "127.0.0.1:9222", want: want},
		{raw: "localhost:9222", want: want},
		{raw: "http://", want: want},
		{raw: "http://[::1", want: want},
		{raw: "ftp://127.0.0.1:21", want: scheme},
		{raw: "file:///tmp/x", want: want},
		{raw: "chrome://127.0.0.1:9222", want: scheme},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			err := ValidateURL(tt.raw)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("ValidateURL(%q) = %v; want nil", tt.raw, err)
				}
				return
			}
			wantMsg := `cdp url "` + tt.raw + `": ` + tt.want
			if err == nil || err.Error() != wantMsg || !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("ValidateURL(%q) = %v; want errdefs.ErrInvalid %q", tt.raw, err, wantMsg)
			}
			if _, cerr := Connect(context.Background(), tt.raw); !errors.Is(cerr, errdefs.ErrInvalid) {
				t.Errorf("Connect(%q) = %v; want errdefs.ErrInvalid", tt.raw, cerr)
			}
		})
	}
}
