package manager

import (
	"testing"

	"go.uber.org/goleak"

	"vibebrowser/manager/keeper"
)

// TestMain fails the package's tests when a goroutine outlives them: every mux, watcher, loop and API
// server the manager starts must end with it. Started as "keep", the test binary is a browser's keeper.
func TestMain(m *testing.M) {
	keeper.RunIfAsked()
	goleak.VerifyTestMain(m)
}
