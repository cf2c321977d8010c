package doctor

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeNamesTheTestedReleases keeps the README's install steps and list of tested releases in step
// with Tested, the one list of them.
func TestReadmeNamesTheTestedReleases(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := strings.Join(strings.Fields(string(b)), " ") // a phrase may wrap across lines
	for _, r := range Tested {
		if want := "browser-use " + r.BrowserUse + " with browser-harness " + r.Harness; !strings.Contains(readme, want) {
			t.Errorf("README lacks %q", want)
		}
	}
	for _, want := range []string{"uv tool install browser-use==" + Recommended().BrowserUse,
		"pipx install browser-use==" + Recommended().BrowserUse, "vibe-browser doctor"} {
		if !strings.Contains(readme, want) {
			t.Errorf("README lacks %q", want)
		}
	}
}
