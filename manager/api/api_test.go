package api

import (
	"regexp"
	"strings"
	"testing"
)

// The hand-written validators must agree with the patterns they replace.
var (
	taskIDPattern = regexp.MustCompile(`\A[0-9A-Fa-f]{8}[A-Za-z0-9-]{0,56}\z`)
	buNamePattern = regexp.MustCompile(`\A[A-Za-z0-9_-]{1,64}\z`)
)

func TestValidatorsMatchTheirPatterns(t *testing.T) {
	inputs := []string{"", "a1b2c3d4", "A1B2C3D4-xyz", "a1b2c3d", "g1b2c3d4", "a1b2c3d4_x", "a1b2c3d4 x", "a1b2c3d4\n",
		"a1b2c3d4" + strings.Repeat("z", 56), "a1b2c3d4" + strings.Repeat("z", 57), "web", "acme-aux", "x/y", "é",
		strings.Repeat("w", 64), strings.Repeat("w", 65), strings.Repeat("c", 80), strings.Repeat("c", 81), "-_-"}
	for _, in := range inputs {
		if got, want := ValidTaskID(in), taskIDPattern.MatchString(in); got != want {
			t.Errorf("ValidTaskID(%q) = %v; want %v", in, got, want)
		}
		if got, want := ValidBUName(in), buNamePattern.MatchString(in); got != want {
			t.Errorf("ValidBUName(%q) = %v; want %v", in, got, want)
		}
	}
}

func FuzzValidators(f *testing.F) {
	f.Add("a1b2c3d4-0000")
	f.Fuzz(func(t *testing.T, in string) {
		if ValidTaskID(in) != taskIDPattern.MatchString(in) || ValidBUName(in) != buNamePattern.MatchString(in) {
			t.Fatalf("validators disagree with their patterns on %q", in)
		}
	})
}
