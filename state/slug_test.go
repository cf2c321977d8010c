package state

import (
	"encoding/hex"
	"errors"
	"regexp"
	"strings"
	"testing"

	"vibebrowser/mux/errdefs"
)

const testID = "0123abcd4567ef890123abcd4567ef89"

func TestSlug(t *testing.T) {
	tests := []struct {
		name, id, want string
	}{
		{"Shop A", testID, "shop-a"},
		{"My  Shop!!", testID, "my-shop"},
		{"--a--b--", testID, "a-b"},
		{"a.b/c\\d:e", testID, "a-b-c-d-e"},
		{"a\tb\nc", testID, "a-b-c"},
		{"snake_case_Name", testID, "snake_case_name"},
		{"_leading_underscore", testID, "_leading_underscore"},
		{"MIXED123case", testID, "mixed123case"},
		{"店铺一", testID, "store-0123abcd"},
		{"店铺 Shop", testID, "shop"},
		{"Ünïcödé", testID, "n-c-d"},
		{"", testID, "store-0123abcd"},
		{"!!!", testID, "store-0123abcd"},
		{"\u212a", testID, "store-0123abcd"}, // Kelvin sign: only ASCII letters are lower-cased
		{strings.Repeat("a", 50), testID, strings.Repeat("a", 40)},
		{strings.Repeat("a", 39) + " b", testID, strings.Repeat("a", 39)},
		{strings.Repeat("ab-", 20), testID, strings.Repeat("ab-", 13) + "a"},
		{"Web", testID, "web"},
		{"", "ab", "store-ab"},
		{"", "ABCDEF0123", "store-abcdef01"},
		{"", "", "store"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"/"+tt.id, func(t *testing.T) {
			if got := Slug(tt.name, tt.id); got != tt.want {
				t.Errorf("Slug(%q, %q) = %q; want %q", tt.name, tt.id, got, tt.want)
			}
		})
	}
}

var slugRE = regexp.MustCompile(`^[a-z0-9_-]{1,40}$`)

func FuzzSlug(f *testing.F) {
	for _, s := range []string{"Shop A", "店铺", "", "---", "Web", "x-aux", "a-w12", strings.Repeat("z-", 30), "\xff\xfe"} {
		f.Add(s, []byte{0x01, 0x23, 0xab, 0xcd, 0x45})
	}
	f.Fuzz(func(t *testing.T, name string, idBytes []byte) {
		id := hex.EncodeToString(idBytes) // store ids are hex
		got := Slug(name, id)
		if !slugRE.MatchString(got) {
			t.Fatalf("Slug(%q, %q) = %q; want a match of %s", name, id, got, slugRE)
		}
		if err := checkSlugForm(got); err != nil {
			t.Fatalf("Slug(%q, %q) = %q, which ValidateSlug refuses: %v", name, id, got, err)
		}
		if again := Slug(got, id); again != got {
			t.Fatalf("Slug(%q, %q) = %q; want %q (a slug is its own slug)", got, id, again, got)
		}
		if sanitizeSlug(name, MaxSlugLen) == "" && SlugReserved(got) != nil {
			t.Fatalf("Slug(%q, %q) = %q: the fallback for an unusable name is reserved", name, id, got)
		}
	})
}

func TestSlugReserved(t *testing.T) {
	tests := []struct {
		slug     string
		reserved bool
	}{
		{"web", true},
		{"_web", true},
		{"_guard", true},
		{"_x", true},
		{"shop-aux", true},
		{"aux", false},
		{"shopaux", false},
		{"shop-w1", true},
		{"shop-w12", true},
		{"shop-w", false},
		{"shop-wx1", false},
		{"shopw1", false},
		{"web2", false},
		{"my-web", false},
		{"shop", false},
	}
	for _, tt := range tests {
		t.Run(tt.slug, func(t *testing.T) {
			err := SlugReserved(tt.slug)
			if (err != nil) != tt.reserved {
				t.Fatalf("SlugReserved(%q) = %v; want reserved %v", tt.slug, err, tt.reserved)
			}
			if err == nil {
				return
			}
			var ce *ConflictError
			if !errors.As(err, &ce) || !errors.Is(err, errdefs.ErrConflict) || ce.Rule == "" || ce.Value != tt.slug {
				t.Fatalf("SlugReserved(%q) = %#v; want a *ConflictError with the rule", tt.slug, err)
			}
			if !strings.Contains(err.Error(), `must not be "web"`) {
				t.Errorf("SlugReserved(%q) = %q; want the allowed form in the message", tt.slug, err)
			}
		})
	}
}

func TestValidateSlug(t *testing.T) {
	tests := []struct {
		slug string
		want error
	}{
		{"shop-a", nil},
		{"a", nil},
		{"snake_case", nil},
		{strings.Repeat("a", 40), nil},
		{strings.Repeat("a", 41), errdefs.ErrInvalid},
		{"", errdefs.ErrInvalid},
		{"-shop", errdefs.ErrInvalid},
		{"shop-", errdefs.ErrInvalid},
		{"a--b", errdefs.ErrInvalid},
		{"Shop", errdefs.ErrInvalid},
		{"shop a", errdefs.ErrInvalid},
		{"店铺", errdefs.ErrInvalid},
		{"web", errdefs.ErrConflict},
		{"_web", errdefs.ErrConflict},
		{"shop-aux", errdefs.ErrConflict},
		{"shop-w3", errdefs.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.slug, func(t *testing.T) {
			err := ValidateSlug(tt.slug)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("ValidateSlug(%q) = %v; want %v", tt.slug, err, tt.want)
			}
			if errors.Is(err, errdefs.ErrInvalid) && !strings.Contains(err.Error(), "1-40 characters") {
				t.Errorf("ValidateSlug(%q) = %q; want the allowed form in the message", tt.slug, err)
			}
		})
	}
}

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"Shop A", true},
		{"店铺一号", true},
		{"店\u3000铺", true}, // ideographic space
		{"Ünïcödé & Co. (EU)", true},
		{strings.Repeat("é", 100), true},
		{strings.Repeat("é", 101), false},
		{"", false},
		{"   ", false},
		{"a\x00b", false},
		{"a\nb", false},
		{"tab\t", false},
		{"\x1b[31mred", false},
		{"evil\u202etxt.exe", false}, // right-to-left override
		{"zero\u200bwidth", false},
		{"\xff", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateName(tt.name)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateName(%q) = %v; want ok %v", tt.name, err, tt.ok)
			}
			if err != nil && !errors.Is(err, errdefs.ErrInvalid) {
				t.Fatalf("ValidateName(%q) = %v; want errdefs.ErrInvalid", tt.name, err)
			}
		})
	}
}

func TestNewToken(t *testing.T) {
	a, b := NewToken(), NewToken()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a) {
		t.Fatalf("NewToken() = %q; want 32 hex digits", a)
	}
	if a == b {
		t.Fatalf("NewToken() twice = %q; want different tokens", a)
	}
}

func TestTaskStatusClasses(t *testing.T) {
	tests := []struct {
		status                 TaskStatus
		holding, daemons, ends bool
	}{
		{TaskPending, true, true, false},
		{TaskQueued, true, true, false},
		{TaskDesigning, true, true, false},
		{TaskPlanned, true, true, false},
		{TaskRunning, true, true, false},
		{TaskWaiting, false, true, false},
		{TaskCompleted, false, false, true},
		{TaskFailed, false, false, true},
		{"bogus", false, false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.status), func(t *testing.T) {
			if got := tt.status.HoldsBrowser(); got != tt.holding {
				t.Errorf("%q.HoldsBrowser() = %v; want %v", tt.status, got, tt.holding)
			}
			if got := tt.status.Active(); got != tt.daemons {
				t.Errorf("%q.Active() = %v; want %v", tt.status, got, tt.daemons)
			}
			if got := tt.status.Ended(); got != tt.ends {
				t.Errorf("%q.Ended() = %v; want %v", tt.status, got, tt.ends)
			}
			_, err := ParseTaskStatus(string(tt.status))
			if valid := tt.status != "bogus"; (err == nil) != valid {
				t.Errorf("ParseTaskStatus(%q) = %v; want valid %v", tt.status, err, valid)
			}
		})
	}
}
