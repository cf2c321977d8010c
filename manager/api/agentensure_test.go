package api

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestAgentRequest(t *testing.T) {
	tests := []struct {
		name, storeID, wantKind string
	}{
		{"a store's session", "0123456789ab", KindStore},
		{"the web browser's", "", KindWeb},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := AgentRequest(tt.storeID, "t1", "acme-t1", "c1", ViaMCP)
			want := EnsureRequest{Kind: tt.wantKind, StoreID: tt.storeID, TaskID: "t1", BUName: "acme-t1", ClientID: "c1", Via: ViaMCP}
			if req != want {
				t.Errorf("AgentRequest(%q, …) = %+v; want %+v", tt.storeID, req, want)
			}
		})
	}
}

// TestRetryUnreachable: only an unreachable manager is asked again, and only within the window.
func TestRetryUnreachable(t *testing.T) {
	unreachable := fmt.Errorf("is the manager running? (x): %w", ErrUnreachable)
	tests := []struct {
		name      string
		window    time.Duration
		errs      []error // the answers, in order; the last repeats
		wantCalls int
		wantErr   error
	}{
		{"answers at once", time.Second, []error{nil}, 1, nil},
		{"back after two misses", time.Second, []error{unreachable, unreachable, nil}, 3, nil},
		{"a refusal is not retried", time.Second, []error{&Error{Status: 429, Message: "budget"}}, 1, &Error{}},
		{"no window asks once", 0, []error{unreachable}, 1, ErrUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := 0
			err := RetryUnreachable(tt.window, func() error {
				e := tt.errs[min(calls, len(tt.errs)-1)]
				calls++
				return e
			})
			if calls != tt.wantCalls {
				t.Errorf("RetryUnreachable made %d calls; want %d", calls, tt.wantCalls)
			}
			var apiErr *Error
			switch want := tt.wantErr.(type) {
			case nil:
				if err != nil {
					t.Errorf("RetryUnreachable = %v; want nil", err)
				}
			case *Error:
				if !errors.As(err, &apiErr) {
					t.Errorf("RetryUnreachable = %v; want the *Error as it is", err)
				}
			default:
				if !errors.Is(err, want) {
					t.Errorf("RetryUnreachable = %v; want %v", err, want)
				}
			}
		})
	}
}
