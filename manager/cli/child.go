package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// forwarded are the signals a command that runs a child passes on to it: the child's end is the command's.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// runChild starts child, runs alongside until it exits, passes it every forwarded signal, and returns its
// status as the command's (128+N when a signal ended it). noStart says what a child that cannot start is.
func runChild(child *exec.Cmd, noStart func(error) error, alongside func(ctx context.Context)) error {
	// main's handler would cancel at the first signal and exit at the second, before the child has finished.
	signal.Reset(syscall.SIGINT, syscall.SIGTERM)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	if err := child.Start(); err != nil {
		return noStart(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go alongside(ctx)
	go func() {
		for {
			select {
			case sig := <-sigs:
				child.Process.Signal(sig)
			case <-ctx.Done():
				return
			}
		}
	}()
	err := child.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit):
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return &exitCodeError{code: 128 + int(ws.Signal())}
		}
		return &exitCodeError{code: exit.ExitCode()}
	default:
		return err
	}
}
