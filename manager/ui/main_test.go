package ui

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a live stream outlives its viewer.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
