// Package apierr is the one place an error of an errdefs class becomes an HTTP answer.
package apierr

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/rs/zerolog"

	"vibebrowser/manager/api"
	"vibebrowser/mux/errdefs"
)

// The manager's names for the classes of errdefs, kept while its handlers still spell them so.
var (
	ErrBudget       = errdefs.ErrBudget
	ErrStartTimeout = errdefs.ErrStartTimeout
	ErrShuttingDown = errdefs.ErrShuttingDown
	ErrUnavailable  = errdefs.ErrUnavailable
	ErrStartFailed  = errdefs.ErrStartFailed
	ErrBadRequest   = errdefs.ErrInvalid
	ErrUnauthorized = errdefs.ErrUnauthorized
	ErrForbidden    = errdefs.ErrForbidden
	ErrQuota        = errdefs.ErrQuota
	ErrNoRoute      = errdefs.ErrNoRoute
)

// errorClasses is the one table from the classes of errdefs to HTTP statuses and API codes.
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

// Status maps an error to its status and a stable code for the JSON body.
func Status(err error) (int, string) {
	for _, row := range errorClasses {
		if errors.Is(err, row.class) {
			return row.status, row.code
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
