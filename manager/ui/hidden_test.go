package ui

import (
	"regexp"
	"strconv"
	"testing"

	"vibebrowser/manager/untrusted"
)

// The tab page marks a live title's hidden characters in JavaScript (tab.js's hidden): the same characters
// untrusted.Escaped marks on the server's pages.
func TestTabScriptHidesWhatTheServerEscapes(t *testing.T) {
	js, err := assetFS.ReadFile("assets/tab.js")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`const hidden = /\[([^\]]+)\]/g;`).FindSubmatch(js)
	if m == nil {
		t.Fatal("tab.js has no `const hidden = /[…]/g;`")
	}
	in := map[rune]bool{}
	for _, r := range regexp.MustCompile(`\\u([0-9a-f]{4})(?:-\\u([0-9a-f]{4}))?`).FindAllSubmatch(m[1], -1) {
		lo, _ := strconv.ParseUint(string(r[1]), 16, 32)
		hi := lo
		if len(r[2]) > 0 {
			hi, _ = strconv.ParseUint(string(r[2]), 16, 32)
		}
		for c := lo; c <= hi; c++ {
			in[rune(c)] = true
		}
	}
	for r := rune(0); r < 0x10000; r++ {
		if in[r] != untrusted.Escaped(r) {
			t.Errorf("U+%04X: tab.js hides it %v, untrusted.Escaped says %v", r, in[r], untrusted.Escaped(r))
		}
	}
}
