package cli

import (
	"testing"
	"time"
)

func TestSizeAndAgeWords(t *testing.T) {
	sizes := []struct {
		n    int64
		want string
	}{{512, "512 B"}, {27 << 10, "27.0 KiB"}, {3 << 20, "3.0 MiB"}}
	for _, tt := range sizes {
		if got := sizeWords(tt.n); got != tt.want {
			t.Errorf("sizeWords(%d) = %q; want %q", tt.n, got, tt.want)
		}
	}
	ages := []struct {
		ago  time.Duration
		want string
	}{{0, "0s"}, {90 * time.Second, "1m30s"}, {3*time.Hour + 20*time.Minute, "3h20m0s"}, {50 * time.Hour, "2d2h0m0s"}}
	for _, tt := range ages {
		if got := ageWords(time.Now().Add(-tt.ago)); got != tt.want {
			t.Errorf("ageWords(%v ago) = %q; want %q", tt.ago, got, tt.want)
		}
	}
	if got := ageWords(time.Time{}); got != "never" {
		t.Errorf("ageWords(zero) = %q; want never", got)
	}
}
