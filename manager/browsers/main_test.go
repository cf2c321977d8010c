package browsers

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when a goroutine outlives them: every mux, watcher, loop and API
// server the manager starts must end with it.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
