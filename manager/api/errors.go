package api

import (
	"errors"
	"fmt"
)

// Codes of the JSON error body, one per error class of the manager (the HTTP status it comes with is in
// parentheses). Callers branch on these with IsCode, never on the message.
const (
	CodeBadRequest     = "bad_request"     // the request is malformed (400)
	CodeNotFound       = "not_found"       // no such store or task (404)
	CodeNoRoute        = "no_route"        // no such route: a client of another version (404)
	CodeUnauthorized   = "unauthorized"    // the agents' socket wants a live task token (401)
	CodeForbidden      = "forbidden"       // the caller may not ask this: the rule is in the message (403)
	CodeConflict       = "conflict"        // a name, slug or Ziniao account is taken (409)
	CodeRelaunchBudget = "relaunch_budget" // the store's relaunch budget is spent (429)
	CodeQuota          = "quota"           // a task is at a quota: the message names it and its knob (429)
	CodeShuttingDown   = "shutting_down"   // the manager is stopping (503)
	CodeUnavailable    = "unavailable"     // something the request needs is missing on this machine (503)
	CodeStartFailed    = "start_failed"    // the browser could not be started (502)
	CodeStartTimeout   = "start_timeout"   // the browser did not become ready in time (504)
	CodeInternal       = "internal"        // anything else (500)
)

// Error is the JSON body of every non-2xx answer, and the error the client returns for it.
type Error struct {
	Status  int    `json:"-"`
	Message string `json:"error"`
	Code    string `json:"code"`
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("manager: %s (HTTP %d)", e.Message, e.Status)
	}
	return fmt.Sprintf("manager: %s (%s, HTTP %d)", e.Message, e.Code, e.Status)
}

// IsCode reports whether err is, or wraps, an answer of the manager with code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
