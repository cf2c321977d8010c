// Package api is the manager's local API contract: its request and response types and the Go client that
// the CLI, the shim and the tests use to reach the daemon over its unix socket.
package api

import "fmt"

// Route paths served by the manager under its unix socket.
const (
	PathHealth        = "/v1/health"
	PathSessionEnsure = "/v1/sessions/ensure"
	PathEvents        = "/v1/events"
)

// Session kinds a shim asks for.
const (
	KindStore = "store"
	KindWeb   = "web"
)

// EnsureRequest is the shim's call: make the browser of a store (or the web browser) ready and register the
// calling task's lease.
type EnsureRequest struct {
	Kind     string `json:"kind"`               // KindStore or KindWeb
	StoreID  string `json:"store_id,omitempty"` // required for KindStore
	ClientID string `json:"client_id"`          // the mux client id the shim will connect as
	BUName   string `json:"bu_name"`            // the browser-use session name
	TaskID   string `json:"task_id,omitempty"`  // VIBE_TASK_ID of the caller, if any
}

// EnsureResponse tells the shim where its browser-use daemon must connect.
type EnsureResponse struct {
	CDPWS string `json:"cdp_ws"` // ws://127.0.0.1:<port>/<token>/client-<id>
}

// Event kinds reported to the manager.
const (
	EventWedgeUnrecoverable = "wedge_unrecoverable"
)

// Event is a best-effort report from a shim (or another client) that the manager logs and counts.
type Event struct {
	Kind    string `json:"kind"`
	StoreID string `json:"store_id,omitempty"`
	BUName  string `json:"bu_name,omitempty"`
	TaskID  string `json:"task_id,omitempty"`
	Message string `json:"message,omitempty"`
}

// Health is the answer of PathHealth.
type Health struct {
	OK      bool   `json:"ok"`
	Version string `json:"version"`
	PID     int    `json:"pid"`
}

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
