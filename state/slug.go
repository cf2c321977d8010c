package state

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"vibebrowser/mux/errdefs"
)

// MaxSlugLen keeps "<slug>-<task8>-wNN" within browser-use's 64-character session names.
const MaxSlugLen = 40

// MaxNameLen is the longest store name, in characters.
const MaxNameLen = 100

const slugForm = `a slug is 1-40 characters of a-z, 0-9, '-' and '_', with no leading, trailing or doubled '-'`

const slugReservedForm = `a slug must not be "web", start with '_', or end in "-aux" or "-w<digits>"`

// Slug derives a store's slug from its name (SPEC §4.4): ASCII letters are lower-cased, every other
// character outside [a-z0-9_-] becomes '-', runs of '-' collapse, '-' is trimmed from both ends, and
// the result is cut to MaxSlugLen. A name with nothing left (e.g. all CJK) gives "store-<id[:8]>".
// The result may be reserved (a store named "Web"); SlugReserved says so.
func Slug(name, id string) string {
	if s := sanitizeSlug(name, MaxSlugLen); s != "" {
		return s
	}
	short := id
	if len(short) > 8 {
		short = short[:8]
	}
	if s := sanitizeSlug(short, 8); s != "" {
		return "store-" + s
	}
	return "store"
}

func sanitizeSlug(s string, limit int) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case 'A' <= r && r <= 'Z':
			r += 'a' - 'A'
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '_':
		default:
			r = '-'
		}
		if r == '-' && (dash || b.Len() == 0) {
			continue
		}
		dash = r == '-'
		b.WriteRune(r)
		if b.Len() == limit {
			break
		}
	}
	return strings.TrimRight(b.String(), "-")
}

// ValidateSlug accepts exactly the slugs Slug can produce that are not reserved. Its error is
// errdefs.ErrInvalid for a malformed slug and a *ConflictError (errdefs.ErrConflict) for a reserved one; both
// name the rule and the allowed form.
func ValidateSlug(slug string) error {
	if err := checkSlugForm(slug); err != nil {
		return err
	}
	return SlugReserved(slug)
}

func checkSlugForm(slug string) error {
	bad := func(why string) error {
		return fmt.Errorf("slug %q %s; %s: %w", slug, why, slugForm, errdefs.ErrInvalid)
	}
	switch {
	case slug == "":
		return bad("is empty")
	case len(slug) > MaxSlugLen:
		return bad(fmt.Sprintf("is %d characters long", len(slug)))
	case slug[0] == '-' || slug[len(slug)-1] == '-':
		return bad("starts or ends with '-'")
	case strings.Contains(slug, "--"):
		return bad(`contains "--"`)
	}
	for i, r := range slug {
		if !('a' <= r && r <= 'z' || '0' <= r && r <= '9' || r == '-' || r == '_') {
			return bad(fmt.Sprintf("has %q at byte %d", r, i))
		}
	}
	return nil
}

// SlugReserved reports, as a *ConflictError carrying the rule, whether slug collides with a name the
// system gives its own sessions and directories: "web" (the web browser), a leading '_' (_web, _guard),
// a trailing "-aux" (the aux session) or "-w<digits>" (worker slots). It returns nil otherwise.
func SlugReserved(slug string) error {
	var rule string
	switch {
	case slug == "web":
		rule = `"web" is the web browser's session name`
	case strings.HasPrefix(slug, "_"):
		rule = `names starting with '_' belong to the manager (_web, _guard)`
	case strings.HasSuffix(slug, "-aux"):
		rule = `the "-aux" suffix marks a store's aux session`
	case workerSuffix(slug):
		rule = `the "-w<digits>" suffix marks a worker slot's session`
	default:
		return nil
	}
	return &ConflictError{What: "slug", Value: slug, Rule: rule + "; " + slugReservedForm}
}

func workerSuffix(s string) bool {
	i := strings.LastIndex(s, "-w")
	if i < 0 || i+2 == len(s) {
		return false
	}
	for _, r := range s[i+2:] {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// ValidateName accepts a store name: non-blank, at most MaxNameLen characters, valid UTF-8, and
// made only of printable characters and spaces (no control, format or line-separator characters,
// which could forge log lines or reorder text on screen).
func ValidateName(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("store name %q %s; a name is 1-%d printable characters: %w", name, why, MaxNameLen, errdefs.ErrInvalid)
	}
	switch {
	case strings.TrimSpace(name) == "":
		return bad("is blank")
	case !utf8.ValidString(name):
		return bad("is not valid UTF-8")
	case utf8.RuneCountInString(name) > MaxNameLen:
		return bad(fmt.Sprintf("has %d characters", utf8.RuneCountInString(name)))
	}
	for _, r := range name {
		if !unicode.IsGraphic(r) {
			return bad(fmt.Sprintf("contains %U", r))
		}
	}
	return nil
}
