package hostname

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"host1", true},
		{"Shop-Box.example", true},
		{strings.Repeat("a", 63), true},
		{"", false},
		{"-host", false},
		{".host", false},
		{"my host", false},
		{"my_host", false},
		{"a/b", false},
		{"hôte", false},
		{"host\n", false},
		{strings.Repeat("a", 64), false},
	}
	for _, tt := range tests {
		err := Check(tt.name)
		if tt.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), Rule) {
			t.Errorf("Check(%q) = %v; want ok=%v, a refusal naming the rule", tt.name, err, tt.ok)
		}
	}
}
