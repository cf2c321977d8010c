package keeper

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rs/zerolog"

	"vibebrowser/manager/netid"
)

// Main is `vibe-browser keep`: it parses the argv Command made, starts Chromium and keeps its pipe until
// Chromium exits, and returns the exit code: Chromium's status (128+n for a signal n), 2 for a wrong
// command line, 1 when the keeper itself failed. It logs to stderr (zerolog, component "keeper").
//
// Main owns the process's signals: SIGTERM and SIGINT stop Chromium (Browser.close, then SIGTERM and
// SIGKILL of its group, bounded), replacing whatever handler the caller installed for them; SIGHUP and
// SIGPIPE are caught and dropped, so the keeper outlives its launcher's terminal and a write to a closed
// pipe returns EPIPE. They are caught rather than ignored because an ignored signal stays ignored across
// exec, and Chromium should start with the default dispositions.
func Main(args []string) int {
	cfg, err := parseArgs(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "vibe-browser keep: %v\n", err)
		return exitUsage
	}
	log := zerolog.New(os.Stderr).With().Timestamp().Str("component", "keeper").Str("key", cfg.Key).Logger()
	var upstream netid.Proxy
	if cfg.ForwardPort > 0 {
		if upstream, err = readUpstream(os.Stdin); err != nil {
			fmt.Fprintf(os.Stderr, "vibe-browser keep: %v\n", err)
			return exitUsage
		}
	}
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP, syscall.SIGPIPE) // never read: dropped
	// vibe-browser's main exits at a second SIGTERM; the keeper's own stop is bounded and must run to the end.
	signal.Reset(syscall.SIGINT, syscall.SIGTERM)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return run(cfg, upstream, log, sigs)
}

// RunIfAsked runs Main and exits when this process was started as a keeper ("keep" as its first argument):
// a test binary that launches browsers on the pipe is its own keeper, called from its TestMain.
func RunIfAsked() {
	if len(os.Args) > 1 && os.Args[1] == "keep" {
		os.Exit(Main(os.Args[2:]))
	}
}
