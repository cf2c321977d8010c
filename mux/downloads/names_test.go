package downloads

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("é", 150) + ".csv" // 304 bytes
	tests := []struct{ in, want string }{
		{"report.csv", "report.csv"},
		{"a/b\\c.txt", "a_b_c.txt"},
		{"../../x", "_.._x"},
		{".hidden", "hidden"},
		{"...", FallbackName},
		{"", FallbackName},
		{"  spaced .txt  ", "spaced .txt"},
		{"tab\there\x00.bin", "tab_here_.bin"},
		{"bad\xffutf8", "bad_utf8"},
		{"报告 2026.xlsx", "报告 2026.xlsx"},
		{long, strings.Repeat("é", 98) + ".csv"},
	}
	for _, tt := range tests {
		if got := SanitizeName(tt.in); got != tt.want {
			t.Errorf("SanitizeName(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestUniqueName(t *testing.T) {
	tests := []struct {
		name string
		i    int
		want string
	}{
		{"report.csv", 0, "report.csv"},
		{"report.csv", 1, "report (1).csv"},
		{"report.csv", 12, "report (12).csv"},
		{"README", 2, "README (2)"},
		{"archive.tar.gz", 1, "archive.tar (1).gz"},
		{strings.Repeat("x", 196) + ".csv", 1, strings.Repeat("x", 192) + " (1).csv"},
	}
	for _, tt := range tests {
		if got := UniqueName(tt.name, tt.i); got != tt.want {
			t.Errorf("UniqueName(%q, %d) = %q; want %q", tt.name, tt.i, got, tt.want)
		}
	}
}

func FuzzSanitizeName(f *testing.F) {
	for _, s := range []string{"report.csv", "../x", ".a", "", strings.Repeat("报", 100) + ".txt", "a\x00b", "\xff"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, i int) {
		got := SanitizeName(s)
		check := func(name string) {
			if name == "" || len(name) > MaxNameBytes || !utf8.ValidString(name) || strings.ContainsAny(name, "/\\\x00") ||
				strings.HasPrefix(name, ".") || name != filepath.Base(name) {
				t.Fatalf("unsafe name %q (from %q)", name, s)
			}
		}
		check(got)
		if again := SanitizeName(got); again != got {
			t.Fatalf("SanitizeName(%q) = %q, not idempotent (%q)", got, again, s)
		}
		if i < 0 {
			i = -i
		}
		check(UniqueName(got, i%maxUnique))
	})
}
