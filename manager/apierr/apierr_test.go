package apierr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/remote"
	"vibebrowser/manager/ziniao"
	"vibebrowser/state"
)

// TestErrorClassesReachTheClient sends every error class through Write on a real unix socket and checks
// what the Go client sees: the status SPEC §4.2 gives the class, its code for api.IsCode, and the message.
func TestErrorClassesReachTheClient(t *testing.T) {
	tests := []struct {
		class  error
		status int
		code   string
	}{
		{ErrBadRequest, 400, api.CodeBadRequest},
		{state.ErrInvalid, 400, api.CodeBadRequest},
		{state.ErrNotFound, 404, api.CodeNotFound},
		{ErrNoRoute, 404, api.CodeNoRoute},
		{state.ErrConflict, 409, api.CodeConflict},
		{chrome.ErrProfileInUse, 409, api.CodeConflict},
		{ziniao.ErrAccountBusy, 409, api.CodeConflict},
		{remote.ErrBadURL, 400, api.CodeBadRequest},
		{ErrBudget, 429, api.CodeRelaunchBudget},
		{ErrQuota, 429, api.CodeQuota},
		{ErrShuttingDown, 503, api.CodeShuttingDown},
		{ErrUnavailable, 503, api.CodeUnavailable},
		{state.ErrExhausted, 503, api.CodeUnavailable},
		{ErrStartFailed, 502, api.CodeStartFailed},
		{ErrStartTimeout, 504, api.CodeStartTimeout},
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
		Write(w, r, zerolog.Nop(), fmt.Errorf("store acme: %w", tests[i].class))
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
