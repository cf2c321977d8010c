package downloads

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// maxUnique bounds the " (N)" tried for one name.
const maxUnique = 10000

// SanitizeName makes a suggested file name safe as one path element: separators, control characters and
// invalid UTF-8 become "_", leading dots and spaces go (no hidden files, no "." or ".."), and it is cut to
// MaxNameBytes keeping its extension. An empty result is FallbackName.
func SanitizeName(s string) string {
	s = strings.ToValidUTF8(s, "_")
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < 0x20 || r == 0x7f {
			return '_'
		}
		return r
	}, s)
	s = strings.TrimLeft(s, ". ")
	s = strings.TrimRight(s, " ")
	if s == "" {
		return FallbackName
	}
	return fitName(s, "")
}

// UniqueName is the i-th candidate for name: name itself, then "stem (i).ext", within MaxNameBytes.
func UniqueName(name string, i int) string {
	if i == 0 {
		return fitName(name, "")
	}
	return fitName(name, fmt.Sprintf(" (%d)", i))
}

// fitName puts suffix between name's stem and extension and cuts the stem (at a rune boundary) so the
// whole is at most MaxNameBytes. An extension too long to keep is treated as part of the stem.
func fitName(name, suffix string) string {
	ext := filepath.Ext(name)
	if len(ext) > 32 || len(ext) == len(name) {
		ext = ""
	}
	stem := name[:len(name)-len(ext)]
	room := MaxNameBytes - len(suffix) - len(ext)
	if len(stem) > room {
		cut := room
		for cut > 0 && !utf8.RuneStart(stem[cut]) {
			cut--
		}
		stem = strings.TrimRight(stem[:cut], " ")
	}
	if stem == "" {
		stem = FallbackName
	}
	return stem + suffix + ext
}
