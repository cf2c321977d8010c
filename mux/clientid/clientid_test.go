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
