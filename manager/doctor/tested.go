package doctor

import (
	"fmt"
	"strings"
)

// Release is a browser-use release and the browser-harness it ran on.
type Release struct {
	BrowserUse string
	Harness    string
}

// Tested is every browser-use release this vibe-browser was tested against, oldest first: the one list of
// them (the README prints it; a test keeps the two in step). browser-use 0.13.9 pins browser-harness 0.1.12,
// whose daemon marks its tab's title unless BH_TAB_MARKER=0 and closes its tab on --reload.
var Tested = []Release{
	{BrowserUse: "0.13.8", Harness: "0.1.9"},
	{BrowserUse: "0.13.9", Harness: "0.1.12"},
}

// Recommended is the release to install: the newest tested one.
func Recommended() Release { return Tested[len(Tested)-1] }

// InstallFix is how to install the recommended browser-use CLI.
func InstallFix() string {
	v := Recommended().BrowserUse
	return fmt.Sprintf("uv tool install browser-use==%s (or pipx install browser-use==%s)", v, v)
}

// testedList names the tested releases, for messages.
func testedList() string {
	var s []string
	for _, r := range Tested {
		s = append(s, r.BrowserUse+" with browser-harness "+r.Harness)
	}
	return strings.Join(s, ", ")
}

// testedRelease returns the tested release of browser-use version v.
func testedRelease(v string) (Release, bool) {
	for _, r := range Tested {
		if r.BrowserUse == v {
			return r, true
		}
	}
	return Release{}, false
}
