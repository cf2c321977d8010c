package answer

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"vibebrowser/manager/api"
	"vibebrowser/mux/errdefs"
)

// TestErrorClassesReachTheClient sends every error class through Write on a real unix socket and checks
// what the Go client sees: the status SPEC §4.2 gives the class, its code for api.IsCode, and the message.
func TestErrorClassesReachTheClient(t *testing.T) {
	tests := []struct {
		class  error
		status int
		code   string
	}{
		{errdefs.ErrInvalid, 400, api.CodeBadRequest},
		{errdefs.Invalid("cdp url %q: the scheme must be http, https, ws or wss", "ftp://x"), 400, api.CodeBadRequest},
		{errdefs.ErrNotFound, 404, api.CodeNotFound},
		{errdefs.NotFound("no such snapshot"), 404, api.CodeNotFound},
		{errdefs.ErrNoRoute, 404, api.CodeNoRoute},
		{errdefs.ErrConflict, 409, api.CodeConflict},
		{errdefs.Conflict("profile in use"), 409, api.CodeConflict},
		{errdefs.ErrBudget, 429, api.CodeRelaunchBudget},
		{errdefs.ErrQuota, 429, api.CodeQuota},
		{errdefs.ErrShuttingDown, 503, api.CodeShuttingDown},
		{errdefs.ErrUnavailable, 503, api.CodeUnavailable},
		{errdefs.Unavailable("the browser is not running"), 503, api.CodeUnavailable},
		{errdefs.ErrStartFailed, 502, api.CodeStartFailed},
		{errdefs.ErrStartTimeout, 504, api.CodeStartTimeout},
		{errdefs.ErrUnauthorized, 401, api.CodeUnauthorized},
		{errdefs.ErrForbidden, 403, api.CodeForbidden},
		{errors.New("unclassified"), 500, api.CodeInternal},
	}
	sock := filepath.Join(t.TempDir(), "m.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := 0
		fmt.Sscan(r.URL.Query().Get("i"), &i)
		Write(w, fmt.Errorf("store acme: %w", tests[i].class))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	client := api.NewClient(sock)
	for i, tt := range tests {
		t.Run(tt.code+" "+tt.class.Error(), func(t *testing.T) {
			err := client.Do(context.Background(), api.MethodGet, fmt.Sprintf("/x?i=%d", i), nil, nil)
			var apiErr *api.Error
			if !errors.As(err, &apiErr) {
				t.Fatalf("answer to %v = %v; want an *api.Error", tt.class, err)
			}
			if apiErr.Status != tt.status || !api.IsCode(err, tt.code) {
				t.Errorf("answer to %v = HTTP %d, code %q; want %d, %q", tt.class, apiErr.Status, apiErr.Code, tt.status, tt.code)
			}
			if want := "store acme: " + tt.class.Error(); apiErr.Message != want {
				t.Errorf("answer to %v carries %q; want %q", tt.class, apiErr.Message, want)
			}
		})
	}
}
