package manager

import (
	"errors"
	"net/http"

	"vibebrowser/manager/cdp"
	"vibebrowser/manager/chrome"
	"vibebrowser/manager/ziniao"
	"vibebrowser/state"
)

// Error classes of the manager. They are mapped to HTTP statuses only in writeError.
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
)

// httpStatus maps an error to its status and a stable code for the JSON body: the one table from error
// classes, the manager's, state's and the backends', to answers.
func httpStatus(err error) (int, string) {
	switch {
	case errors.Is(err, ErrBadRequest), errors.Is(err, state.ErrInvalid), errors.Is(err, cdp.ErrBadURL):
		return http.StatusBadRequest, "bad_request"
	case errors.Is(err, state.ErrNotFound):
		return http.StatusNotFound, "not_found"
	case errors.Is(err, state.ErrConflict), errors.Is(err, chrome.ErrProfileInUse), errors.Is(err, ziniao.ErrAccountBusy):
		return http.StatusConflict, "conflict"
	case errors.Is(err, ErrBudget):
		return http.StatusTooManyRequests, "relaunch_budget"
	case errors.Is(err, ErrShuttingDown):
		return http.StatusServiceUnavailable, "shutting_down"
	case errors.Is(err, ErrUnavailable), errors.Is(err, state.ErrExhausted):
		return http.StatusServiceUnavailable, "unavailable"
	case errors.Is(err, ErrStartFailed):
		return http.StatusBadGateway, "start_failed"
	case errors.Is(err, ErrStartTimeout):
		return http.StatusGatewayTimeout, "start_timeout"
	}
	return http.StatusInternalServerError, "internal"
}
