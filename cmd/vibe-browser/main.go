// Package main is the vibe-browser command: `vibe-browser serve` runs the manager daemon, every other
// subcommand is a client of it.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"vibebrowser/manager"
	"vibebrowser/manager/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	// Installed before anything opens state: the first signal starts the quit barrier, a second exits at once.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		cancel()
		sig := <-sigs
		cli.SecondSignal(os.Stderr, sig)
		os.Exit(130)
	}()
	code := cli.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, manager.Run)
	cancel()
	os.Exit(code)
}
