package clientid

import (
	"strings"
	"testing"
)

func TestValid(t *testing.T) {
	tests := []struct {
		id   string
		want bool
	}{
		{"manual", true},
		{"aux", true},
		{"a1b2c3d4-0000-4000-8000-000000000000-w3", true},
		{"under_score", true},
		{strings.Repeat("a", MaxLen), true},
		{"", false},
		{strings.Repeat("a", MaxLen+1), false},
		{"has space", false},
		{"slash/", false},
		{"dot.", false},
		{"ünï", false},
	}
	for _, tt := range tests {
		if got := Valid(tt.id); got != tt.want {
			t.Errorf("Valid(%q) = %v; want %v", tt.id, got, tt.want)
		}
	}
}

func TestOwnerDir(t *testing.T) {
	tests := []struct{ id, want string }{
		{"a1b2c3d4-0000-4000-8000-000000000000", "a1b2c3d4-0000-4000-8000-000000000000"},
		{"a1b2c3d4-0000-4000-8000-000000000000-w3", "a1b2c3d4-0000-4000-8000-000000000000"},
		{"a1b2c3d4-w12", "a1b2c3d4"},
		{"a1b2c3d4-w0", "a1b2c3d4-w0"},
		{"a1b2c3d4-w01", "a1b2c3d4-w01"},
		{"a1b2c3d4-w", "a1b2c3d4-w"},
		{"a1b2c3d4-wx", "a1b2c3d4-wx"},
		{"-w1", "-w1"},
		{"aux", "aux"},
		{"manual", "manual"},
		{"human", "human"},
		{"anon-0123456789abcdef", "anon-0123456789abcdef"},
	}
	for _, tt := range tests {
		if got := OwnerDir(tt.id); got != tt.want {
			t.Errorf("OwnerDir(%q) = %q; want %q", tt.id, got, tt.want)
		}
	}
}
