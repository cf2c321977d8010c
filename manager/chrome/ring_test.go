package chrome

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestRing(t *testing.T) {
	long := strings.Repeat("x", 3*maxLineBytes)
	var many []string
	for i := range ringLines + 7 {
		many = append(many, fmt.Sprintf("line %d", i))
	}
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{name: "empty", input: "", want: nil},
		{name: "no trailing newline", input: "a\nb", want: []string{"a", "b"}},
		{name: "keeps the last lines", input: strings.Join(many, "\n") + "\n", want: many[7:]},
		{name: "truncates a long line", input: "a\n" + long + "\nb\n", want: []string{"a", long[:maxLineBytes] + "…", "b"}},
		{name: "long line at EOF", input: long, want: []string{long[:maxLineBytes] + "…"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRing()
			r.consume(strings.NewReader(tt.input), zerolog.Nop())
			if got := r.snapshot(); !slices.Equal(got, tt.want) {
				t.Errorf("ring(%.40q) = %.200q; want %.200q", tt.input, got, tt.want)
			}
		})
	}
}
