package errdefs

import (
	"errors"
	"fmt"
	"testing"
)

// TestConstructorsKeepTheirTextAndClass: a constructed error reads as its message alone, wrapped or not, and
// errors.Is finds its class and no other.
func TestConstructorsKeepTheirTextAndClass(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		class error
		text  string
	}{
		{"NotFound", NotFound("no store %q", "acme"), ErrNotFound, `no store "acme"`},
		{"Conflict", Conflict("profile in use"), ErrConflict, "profile in use"},
		{"Invalid", Invalid("cdp url %q: want http", "x"), ErrInvalid, `cdp url "x": want http`},
		{"Unavailable", Unavailable("the browser is not running"), ErrUnavailable, "the browser is not running"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err.Error() != tt.text {
				t.Errorf("%s(…).Error() = %q; want %q", tt.name, tt.err.Error(), tt.text)
			}
			wrapped := fmt.Errorf("store acme: %w", tt.err)
			if !errors.Is(wrapped, tt.class) || !errors.Is(wrapped, tt.err) {
				t.Errorf("errors.Is(%v, %v) = false; want the class and the value both found", wrapped, tt.class)
			}
			if got := Class(wrapped); got != tt.class {
				t.Errorf("Class(%v) = %v; want %v", wrapped, got, tt.class)
			}
			for _, other := range classes {
				if other != tt.class && errors.Is(wrapped, other) {
					t.Errorf("errors.Is(%v, %v) = true; want only its own class", wrapped, other)
				}
			}
		})
	}
}

// TestClass: every class is its own class, the two 404 classes stay apart, and an unclassified error has none.
func TestClass(t *testing.T) {
	for _, c := range classes {
		if got := Class(fmt.Errorf("x: %w", c)); got != c {
			t.Errorf("Class(x: %v) = %v; want %v", c, got, c)
		}
	}
	if errors.Is(ErrNoRoute, ErrNotFound) || errors.Is(ErrNotFound, ErrNoRoute) {
		t.Errorf("ErrNoRoute and ErrNotFound match each other; want two classes (no such route, no such thing)")
	}
	if got := Class(errors.New("plain")); got != nil {
		t.Errorf("Class(plain) = %v; want nil", got)
	}
	if got := Class(nil); got != nil {
		t.Errorf("Class(nil) = %v; want nil", got)
	}
}
