package cli

import (
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// daemonLog is the running `serve` command's logger, nil for every other command. Only ServeCmd.Run sets it.
var daemonLog atomic.Pointer[zerolog.Logger]

// SecondSignal reports a second SIGINT/SIGTERM, after which the process exits at once: on the daemon's log
// (JSON, like every line `serve` writes) while `serve` runs, as one line of text for any other command.
func SecondSignal(stderr io.Writer, sig os.Signal) {
	if log := daemonLog.Load(); log != nil {
		log.Error().Str("component", "manager").Str("signal", sig.String()).
			Msg("second signal: exiting now, the quit barrier cut short")
		return
	}
	fmt.Fprintf(stderr, "vibe-browser: second signal (%v): exiting now\n", sig)
}
