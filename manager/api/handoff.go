package api

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"
)

// Routes of handoffs: an agent's request for a person's help (SPEC §11).
const (
	PathHandoffs      = "/v1/handoffs"             // GET list (?status=pending), POST create (the shim's --ask-human)
	PathHandoff       = "/v1/handoffs/{id}"        // GET
	PathHandoffWait   = "/v1/handoffs/{id}/wait"   // GET: answers once it is no longer pending, or after HandoffPoll
	PathHandoffAnswer = "/v1/handoffs/{id}/answer" // POST HandoffAnswer: a person's answer
	PathHandoffCancel = "/v1/handoffs/{id}/cancel" // POST: the agent stopped waiting
	handoffPathPrefix = PathHandoffs + "/"         // + id
)

// Handoff statuses: pending until a person answers (done, cant_help), the agent stops waiting
// (cancelled) or the wait runs out (timed_out).
const (
	HandoffPending   = "pending"
	HandoffDone      = "done"
	HandoffCantHelp  = "cant_help"
	HandoffTimedOut  = "timed_out"
	HandoffCancelled = "cancelled"
)

// Handoff event kinds, recorded by the manager like its other events.
const (
	EventHandoffRequested = "handoff_requested" // an agent asked a person for help
	EventHandoffAnswered  = "handoff_answered"  // a person answered: done or can't help
	EventHandoffTimedOut  = "handoff_timed_out" // nobody answered within the agent's wait
	EventHandoffCancelled = "handoff_cancelled" // the agent stopped waiting (a signal)
)

// Bounds of a handoff's wait, in seconds: the shim's default, and the default of the manager's
// VIBE_HANDOFF_WAIT_MAX_S (the most any wait gets).
const (
	DefaultHandoffWaitS    = 900
	DefaultHandoffWaitMaxS = 3600
)

// HandoffPoll is how long one wait call may be held by the manager before it answers "still pending";
// the shim then asks again, which is also how it finds a restarted manager.
const HandoffPoll = 25 * time.Second

// Text bounds of a handoff, in bytes.
const (
	MaxHandoffReason = 2000
	MaxHandoffNote   = 4000
)

// HandoffRequest is the body of POST PathHandoffs: who asks, for what, and for how long it waits.
type HandoffRequest struct {
	Kind     string `json:"kind"`               // KindStore or KindWeb
	StoreID  string `json:"store_id,omitempty"` // required for KindStore
	ClientID string `json:"client_id"`
	BUName   string `json:"bu_name"`
	TaskID   string `json:"task_id,omitempty"`
	Reason   string `json:"reason"`
	// WaitS is how long the agent waits for an answer; 0 is DefaultHandoffWaitS. The manager bounds it
	// by VIBE_HANDOFF_WAIT_MAX_S and says the wait it grants in Handoff.WaitS.
	WaitS int `json:"wait_s,omitempty"`
}

// HandoffAnswer is the body of POST PathHandoffAnswer.
type HandoffAnswer struct {
	Status string `json:"status"` // HandoffDone or HandoffCantHelp
	Note   string `json:"note,omitempty"`
}

// Handoff is a request for a person's help as the API, `handoff list --json` and `status --json` print it.
type Handoff struct {
	ID         string    `json:"id"`
	Status     string    `json:"status"`
	Store      string    `json:"store"`              // the store's slug, "web" for the web browser
	StoreID    string    `json:"store_id,omitempty"` // empty for the web browser
	TaskID     string    `json:"task_id,omitempty"`
	ClientID   string    `json:"client_id"`
	BUName     string    `json:"bu_name"`
	Reason     string    `json:"reason"`
	Note       string    `json:"note,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	Deadline   time.Time `json:"deadline"` // when the agent stops waiting
	AnsweredAt time.Time `json:"answered_at,omitzero"`
	WaitS      int       `json:"wait_s"`        // the wait granted, from CreatedAt to Deadline
	URL        string    `json:"url,omitempty"` // where a person sees it in the web UI; empty with the UI off
}

// CheckHandoffText checks a reason or a note (what names it in messages) against its byte bound: valid
// UTF-8, no control characters but newlines and tabs. The shim, the CLI and the manager share this rule.
func CheckHandoffText(what, s string, maxBytes int) error {
	switch {
	case len(s) > maxBytes:
		return fmt.Errorf("the %s is %d bytes; at most %d are allowed: say it shorter", what, len(s), maxBytes)
	case !utf8.ValidString(s):
		return fmt.Errorf("the %s is not valid UTF-8 text", what)
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return fmt.Errorf("the %s contains the control character %U: only text, newlines and tabs are allowed", what, r)
		}
	}
	return nil
}

// ErrHandoffGone is wrapped by WaitHandoff's error when the manager no longer knows the handoff (its
// store was deleted, or its state was reset).
var ErrHandoffGone = errors.New("the handoff is gone")

// CreateHandoff registers a request for a person's help.
func (c *Client) CreateHandoff(ctx context.Context, req HandoffRequest) (Handoff, error) {
	var h Handoff
	err := c.Do(ctx, MethodPost, PathHandoffs, req, &h)
	return h, err
}

// ListHandoffs returns the handoffs in status (every one when status is ""), oldest first.
func (c *Client) ListHandoffs(ctx context.Context, status string) ([]Handoff, error) {
	path := PathHandoffs
	if status != "" {
		path += "?status=" + pathSegment(status)
	}
	var out []Handoff
	err := c.Do(ctx, MethodGet, path, nil, &out)
	return out, err
}

// GetHandoff returns one handoff.
func (c *Client) GetHandoff(ctx context.Context, id string) (Handoff, error) {
	var h Handoff
	err := c.Do(ctx, MethodGet, handoffPathPrefix+pathSegment(id), nil, &h)
	return h, err
}

// WaitHandoff returns the handoff once it is no longer pending, or still pending after at most
// HandoffPoll. A handoff the manager does not know is an error wrapping ErrHandoffGone.
func (c *Client) WaitHandoff(ctx context.Context, id string) (Handoff, error) {
	var h Handoff
	err := c.Do(ctx, MethodGet, handoffPathPrefix+pathSegment(id)+"/wait", nil, &h)
	if IsCode(err, CodeNotFound) {
		err = fmt.Errorf("%w: %w", ErrHandoffGone, err)
	}
	return h, err
}

// AnswerHandoff records a person's answer: HandoffDone or HandoffCantHelp, with an optional note.
func (c *Client) AnswerHandoff(ctx context.Context, id string, a HandoffAnswer) (Handoff, error) {
	var h Handoff
	err := c.Do(ctx, MethodPost, handoffPathPrefix+pathSegment(id)+"/answer", a, &h)
	return h, err
}

// CancelHandoff withdraws a pending handoff: the agent stopped waiting.
func (c *Client) CancelHandoff(ctx context.Context, id string) (Handoff, error) {
	var h Handoff
	err := c.Do(ctx, MethodPost, handoffPathPrefix+pathSegment(id)+"/cancel", nil, &h)
	return h, err
}
