package testkit

import (
	"os"
	"testing"
)

// AllEnv is set where every test must run (.ci/run): a tool a test needs being missing there is a failure,
// not a skip, so a broken install step cannot pass as a green run.
const AllEnv = "VIBE_TEST_ALL"

// Missing skips t for what it lacks (node, its packages, Chromium), or fails it where AllEnv is 1.
func Missing(t testing.TB, what string) {
	t.Helper()
	if os.Getenv(AllEnv) == "1" {
		t.Fatalf("%s (%s=1: every test must run here)", what, AllEnv)
	}
	t.Skip(what)
}
