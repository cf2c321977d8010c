package api

import (
	"context"
	"errors"
	"time"
)

// An agent's ensure, made one way by the shim and by the CLI's agent commands (vibe-browser mcp, endpoint).

// AgentRequest is an agent's ensure call (SPEC §3): the session of store storeID, or the web browser's when
// storeID is "", of a task, under the names SessionNames gave it.
func AgentRequest(storeID, taskID, buName, clientID, via string) EnsureRequest {
	req := EnsureRequest{Kind: KindStore, StoreID: storeID, TaskID: taskID, BUName: buName, ClientID: clientID, Via: via}
	if storeID == "" {
		req.Kind = KindWeb
	}
	return req
}

// EnsureAgent asks the manager for an agent's session. An unreachable manager is asked again for up to
// window (RetryUnreachable; 0 asks once), and an answer without an endpoint is an error.
func (c *Client) EnsureAgent(ctx context.Context, req EnsureRequest, window time.Duration) (EnsureResponse, error) {
	var resp EnsureResponse
	err := RetryUnreachable(window, func() (err error) {
		resp, err = c.EnsureSession(ctx, req)
		return err
	})
	if err == nil && resp.CDPWS == "" {
		err = errors.New("the manager answered without an endpoint")
	}
	return resp, err
}

// RetryUnreachable runs call, and again while its error wraps ErrUnreachable, for up to window: launchd has
// no readiness signal, so a call right after a (re)start may arrive before the socket listens.
func RetryUnreachable(window time.Duration, call func() error) error {
	deadline := time.Now().Add(window)
	for delay := 25 * time.Millisecond; ; delay = min(2*delay, 500*time.Millisecond) {
		err := call()
		if err == nil || !errors.Is(err, ErrUnreachable) || time.Now().Add(delay).After(deadline) {
			return err
		}
		time.Sleep(delay)
	}
}
