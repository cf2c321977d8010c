// Package errdefs holds the error classes every package of vibe-browser wraps; the API maps them to statuses and the shim's main to exit codes.
package errdefs

import (
	"errors"
	"fmt"
)

// The error classes. A package wraps one (fmt.Errorf("store %q: %w", slug, errdefs.ErrNotFound), or a
// constructor below) instead of declaring its own; callers check them with errors.Is. Each class's text is
// the one its users have always read.
var (
	// ErrNotFound: the store, task, handoff, snapshot, shot or download does not exist (404).
	ErrNotFound = errors.New("not found")
	// ErrNoRoute: no handler serves the path: a client of another version, not a missing store (404).
	ErrNoRoute = errors.New("not found")
	// ErrConflict: a name, slug, profile or account is held by someone else, or a thing is no longer in the
	// state the request needs (409).
	ErrConflict = errors.New("conflict")
	// ErrInvalid: the request or an argument is malformed (400).
	ErrInvalid = errors.New("bad request")
	// ErrUnavailable: something the request needs is missing on this machine or used up (503), e.g. the
	// browser binary, the real browser-use CLI or a free port.
	ErrUnavailable = errors.New("unavailable")
	// ErrBudget: the store's relaunch budget is spent (429).
	ErrBudget = errors.New("relaunch budget spent")
	// ErrQuota: a task is at one of its quotas (429); the message names the quota and its knob.
	ErrQuota = errors.New("quota reached")
	// ErrStartFailed: the browser could not be started (502); the message carries the backend's reason.
	ErrStartFailed = errors.New("browser start failed")
	// ErrStartTimeout: a browser did not become ready within VIBE_BROWSER_START_TIMEOUT_S (504).
	ErrStartTimeout = errors.New("browser start timed out")
	// ErrUnauthorized: a call on the agents' socket without a live task token (401).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden: the caller may not ask this (403); the message names the rule (SPEC §14).
	ErrForbidden = errors.New("forbidden")
	// ErrShuttingDown: the manager is stopping and takes no new work (503).
	ErrShuttingDown = errors.New("manager is shutting down")
)

// classes lists every class, in the order Class looks for them.
var classes = []error{ErrNoRoute, ErrNotFound, ErrConflict, ErrInvalid, ErrUnavailable, ErrBudget, ErrQuota,
	ErrStartFailed, ErrStartTimeout, ErrUnauthorized, ErrForbidden, ErrShuttingDown}

// Class returns the class err wraps, or nil for an unclassified error.
func Class(err error) error {
	for _, c := range classes {
		if errors.Is(err, c) {
			return c
		}
	}
	return nil
}

// classed is an error of a class with its own text: errors.Is finds the class, the message is only the text.
type classed struct {
	class error
	msg   string
}

func (e *classed) Error() string { return e.msg }

// Unwrap returns the class.
func (e *classed) Unwrap() error { return e.class }

func newClassed(class error, format string, args []any) error {
	return &classed{class: class, msg: fmt.Sprintf(format, args...)}
}

// NotFound returns an error of class ErrNotFound whose text is the formatted message alone.
func NotFound(format string, args ...any) error { return newClassed(ErrNotFound, format, args) }

// Conflict returns an error of class ErrConflict whose text is the formatted message alone.
func Conflict(format string, args ...any) error { return newClassed(ErrConflict, format, args) }

// Invalid returns an error of class ErrInvalid whose text is the formatted message alone.
func Invalid(format string, args ...any) error { return newClassed(ErrInvalid, format, args) }

// Unavailable returns an error of class ErrUnavailable whose text is the formatted message alone.
func Unavailable(format string, args ...any) error { return newClassed(ErrUnavailable, format, args) }
