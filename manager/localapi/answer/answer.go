// Package answer is the one place an error becomes an HTTP answer of the manager's: its errdefs class
// decides the status and the API code, for the local API and the stores' endpoints alike.
package answer

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/mux/errdefs"
)

// errorClasses is the one table from the error classes (mux/errdefs) to HTTP statuses and API codes: the
// API's answers are the only place a class becomes a status.
var errorClasses = []struct {
	class  error
	status int
	code   string
}{
	{errdefs.ErrNoRoute, http.StatusNotFound, api.CodeNoRoute},
	{errdefs.ErrUnauthorized, http.StatusUnauthorized, api.CodeUnauthorized},
	{errdefs.ErrForbidden, http.StatusForbidden, api.CodeForbidden},
	{errdefs.ErrInvalid, http.StatusBadRequest, api.CodeBadRequest},
	{errdefs.ErrNotFound, http.StatusNotFound, api.CodeNotFound},
	{errdefs.ErrConflict, http.StatusConflict, api.CodeConflict},
	{errdefs.ErrBudget, http.StatusTooManyRequests, api.CodeRelaunchBudget},
	{errdefs.ErrQuota, http.StatusTooManyRequests, api.CodeQuota},
	{errdefs.ErrShuttingDown, http.StatusServiceUnavailable, api.CodeShuttingDown},
	{errdefs.ErrUnavailable, http.StatusServiceUnavailable, api.CodeUnavailable},
	{errdefs.ErrStartFailed, http.StatusBadGateway, api.CodeStartFailed},
	{errdefs.ErrStartTimeout, http.StatusGatewayTimeout, api.CodeStartTimeout},
}

// Status maps an error to the status and code of its class; an error of no class is an internal one.
func Status(err error) (int, string) {
	for _, row := range errorClasses {
		if errors.Is(err, row.class) {
			return row.status, row.code
		}
	}
	return http.StatusInternalServerError, api.CodeInternal
}

// Write answers err: its class's status, and its message and code as the JSON body. It returns the status,
// for the caller's log.
func Write(w http.ResponseWriter, err error) int {
	status, code := Status(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(api.Error{Message: err.Error(), Code: code})
	return status
}

// Error answers err with Write and logs it on log: a warning, an error when it is the manager's
// fault. Every HTTP answer of the manager's with an error goes through it (the API's and a store endpoint's).
func Error(w http.ResponseWriter, r *http.Request, log zerolog.Logger, err error) {
	status := Write(w, err)
	ev := log.Warn()
	if status >= 500 && status != http.StatusServiceUnavailable {
		ev = log.Error()
	}
	ev.Err(err).Str("method", r.Method).Str("path", r.URL.Path).Int("status", status).Msg("API error")
}
