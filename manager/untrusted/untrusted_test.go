package untrusted

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestTerminal(t *testing.T) {
	tests := []struct{ in, want string }{
		{"print('hello, 世界')", "print('hello, 世界')"},
		{"\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"\x1b]0;owned\x07", `\x1b]0;owned\x07`},
		{"a\nb\tc\rd", `a\nb\tc\rd`},
		{"del\x7f", `del\x7f`},
		{"csi\u009b31m nel\u0085", `csi\u009b31m nel\u0085`},
		{"invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069 \u200e\u200f\u061c \u2028\u2029", `\u202a\u202b\u202c\u202d \u2066\u2067\u2068\u2069 \u200e\u200f\u061c \u2028\u2029`},
		{"bad \xff\xfe utf-8", `bad \xff\xfe utf-8`},
		{"zero\u200bwidth\u200d join\u2060 bom\ufeff", `zero\u200bwidth\u200d join\u2060 bom\ufeff`},
		{"keeps \\x1b as typed, and U+FFFD \ufffd", "keeps \\x1b as typed, and U+FFFD \ufffd"},
	}
	for _, tt := range tests {
		if got := Terminal(tt.in); got != tt.want {
			t.Errorf("Terminal(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
func TestJSONIsTheSameJSON(t *testing.T) {
	v := map[string]string{"code": "\x1b[2J\u202e\u0085 tail", "plain": "ok"}
	b, _ := json.MarshalIndent(v, "", "  ")
	got := JSON(b)
	if strings.ContainsFunc(string(got), func(r rune) bool { return r != '\n' && Escaped(r) }) {
		t.Errorf("JSON left a control character: %q", got)
	}
	var back map[string]string
	if err := json.Unmarshal(got, &back); err != nil || back["code"] != v["code"] || back["plain"] != "ok" {
		t.Errorf("JSON(%s) = %s, reads back as %q, %v; want the same values", b, got, back, err)
	}
}

func TestHTML(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"Seller Central <b>&", "Seller Central &lt;b&gt;&amp;"},
		{"line 1\n\tline 2", "line 1\n\tline 2"},
		{"Seller Central\u202e", `Seller Central<span class="esc" title="a hidden character the text holds">\u202e</span>`},
		{"a\x1b[2Jb\u200bc\xff", `a<span class="esc" title="a hidden character the text holds">\x1b</span>[2Jb<span class="esc" title="a hidden character the text holds">\u200b</span>c<span class="esc" title="a hidden character the text holds">\xff</span>`},
	}
	for _, tt := range tests {
		if got := string(HTML(tt.in)); got != tt.want {
			t.Errorf("HTML(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}
