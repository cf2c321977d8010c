package testkit

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// The UI scripts' Chromium turns off the features the manager's headless browsers do (HeadlessDisabledFeatures),
// and so does every test's own.
func TestChromiumsTurnOffTheSameFeatures(t *testing.T) {
	sh, err := os.ReadFile("../js/chromium.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sh), "\noff="+HeadlessDisabledFeatures+"\n") {
		t.Errorf("js/chromium.sh does not turn off %s", HeadlessDisabledFeatures)
	}
	if args := HeadlessChromiumArgs("/p"); !slices.Contains(args, "--disable-features="+HeadlessDisabledFeatures) {
		t.Errorf("HeadlessChromiumArgs = %q; want --disable-features=%s", args, HeadlessDisabledFeatures)
	}
}
