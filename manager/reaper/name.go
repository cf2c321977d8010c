package reaper

import (
	"cmp"
	"slices"
	"strings"

	"vibebrowser/manager/api"
)

// webSlug is the session base of the store-less web browser; it is always a known slug.
const webSlug = api.WebSlug

// ParseName splits a browser-use session name (BU_NAME, the <name> of bu-<name>.pid) into the store slug it
// belongs to and, for a task daemon, the task's first 8 hex characters and worker slot (0 for the main
// session). The forms are <slug>, <slug>-aux (not for web), <slug>-<8hex> and <slug>-<8hex>-w<N>; "web" is
// always a known slug. ok is false for a name that fits no known slug.
//
// Names are matched against the known slugs, longest first, never by a pattern alone: a CJK store's slug
// "store-0b0d4497" ends in eight hex characters, and read by a regex it would pass for store "store" running
// task 0b0d4497. A longer slug wins; a shorter one is tried only when the rest of the name fits no form after
// the longer one (so "a-12345678-w2" is task 12345678 of "a", even when "a-12345678" is a slug too).
func ParseName(name string, slugs []string) (slug, task8 string, worker int, ok bool) {
	for _, s := range orderSlugs(slugs) {
		if task8, worker, ok := parseTail(name, s); ok {
			return s, task8, worker, true
		}
	}
	return "", "", 0, false
}

// orderSlugs returns the distinct non-empty slugs plus "web", longest first (ties in byte order, so the
// result does not depend on the caller's order).
func orderSlugs(slugs []string) []string {
	out := make([]string, 0, len(slugs)+1)
	out = append(out, webSlug)
	for _, s := range slugs {
		if s != "" {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if c := cmp.Compare(len(b), len(a)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return slices.Compact(out)
}

// parseTail matches name against one slug.
func parseTail(name, slug string) (task8 string, worker int, ok bool) {
	if name == slug {
		return "", 0, true
	}
	rest, found := strings.CutPrefix(name, slug+"-")
	if !found {
		return "", 0, false
	}
	if rest == "aux" {
		return "", 0, slug != webSlug
	}
	if len(rest) < 8 || !isHex(rest[:8]) {
		return "", 0, false
	}
	task8, rest = rest[:8], rest[8:]
	if rest == "" {
		return task8, 0, true
	}
	digits, found := strings.CutPrefix(rest, "-w")
	if !found {
		return "", 0, false
	}
	n, ok := workerNumber(digits)
	if !ok {
		return "", 0, false
	}
	return task8, n, true
}

// workerNumber parses the N of -wN: 1 to 9 digits without a leading zero (the shim's --worker form).
func workerNumber(s string) (int, bool) {
	if s == "" || len(s) > 9 || s[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
