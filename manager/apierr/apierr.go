// Package apierr holds the daemon's error classes and is the one place an error becomes an HTTP answer.
package apierr

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/remote"
	"vibebrowser/manager/snapshot"
	"vibebrowser/manager/ziniao"
	"vibebrowser/state"
)

// Error classes of the manager. They are mapped to HTTP statuses only in Write.
var (
	// ErrBudget: the store's relaunch budget is spent (429).
	ErrBudget = errors.New("relaunch budget spent")
	// ErrStartTimeout: a browser did not become ready within VIBE_BROWSER_START_TIMEOUT_S (504).
	ErrStartTimeout = errors.New("browser start timed out")
	// ErrShuttingDown: the manager is stopping and takes no new work (503).
	ErrShuttingDown = errors.New("manager is shutting down")
	// ErrUnavailable: something the request needs is missing on this machine (503), e.g. the real
	// browser-use CLI.
	ErrUnavailable = errors.New("unavailable")
	// ErrStartFailed: the browser could not be started (502); the message carries the backend's reason.
	ErrStartFailed = errors.New("browser start failed")
	// ErrBadRequest: the request is malformed (400).
	ErrBadRequest = errors.New("bad request")
	// ErrUnauthorized: a call on the agents' socket without a live task token (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the caller may not ask this (403); the message names the rule (SPEC §14).
	ErrForbidden = errors.New("forbidden")
	// ErrQuota: a task is at one of its quotas (429); the message names the quota and its knob.
	ErrQuota = errors.New("quota reached")
)

// ErrNoRoute answers a path no handler serves: a client of another version, not a missing store.
var ErrNoRoute = errors.New("not found")

// errorClasses is the one table from error classes (the manager's, state's and the backends') to HTTP
// statuses and API codes; the first row whose class the error wraps wins.
var errorClasses = []struct {
	classes []error
	status  int
	code    string
}{
	{[]error{ErrNoRoute}, http.StatusNotFound, api.CodeNoRoute},
	{[]error{ErrUnauthorized}, http.StatusUnauthorized, api.CodeUnauthorized},
	{[]error{ErrForbidden}, http.StatusForbidden, api.CodeForbidden},
	{[]error{ErrBadRequest, state.ErrInvalid, remote.ErrBadURL}, http.StatusBadRequest, api.CodeBadRequest},
	{[]error{state.ErrNotFound, snapshot.ErrNotFound}, http.StatusNotFound, api.CodeNotFound},
	{[]error{state.ErrConflict, chrome.ErrProfileInUse, ziniao.ErrAccountBusy, snapshot.ErrEmpty}, http.StatusConflict, api.CodeConflict},
	{[]error{ErrBudget}, http.StatusTooManyRequests, api.CodeRelaunchBudget},
	{[]error{ErrQuota}, http.StatusTooManyRequests, api.CodeQuota},
	{[]error{ErrShuttingDown}, http.StatusServiceUnavailable, api.CodeShuttingDown},
	{[]error{ErrUnavailable, state.ErrExhausted}, http.StatusServiceUnavailable, api.CodeUnavailable},
	{[]error{ErrStartFailed}, http.StatusBadGateway, api.CodeStartFailed},
	{[]error{ErrStartTimeout}, http.StatusGatewayTimeout, api.CodeStartTimeout},
}

// Status maps an error to its status and a stable code for the JSON body.
func Status(err error) (int, string) {
	for _, row := range errorClasses {
		for _, class := range row.classes {
			if errors.Is(err, class) {
				return row.status, row.code
			}
		}
	}
	return http.StatusInternalServerError, api.CodeInternal
}

// Write is the one place errors become HTTP answers, and the one place they are logged (on log).
func Write(w http.ResponseWriter, r *http.Request, log zerolog.Logger, err error) {
	status, code := Status(err)
	ev := log.Warn()
	if status >= 500 && status != http.StatusServiceUnavailable {
		ev = log.Error()
	}
	ev.Err(err).Str("method", r.Method).Str("path", r.URL.Path).Int("status", status).Msg("API error")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Error{Message: err.Error(), Code: code})
}
