// Package main is a fake browser-use CLI for tests: it records its argv, environment and stdin, and can
// sleep, ignore SIGTERM or exit with a chosen code, as told by FAKEBU_* variables.
//
//	FAKEBU_RECORD_DIR  write one JSON record per call into this directory (required to record)
//	FAKEBU_SLEEP       sleep this long (a Go duration) after reading stdin; --reload never sleeps
//	FAKEBU_IGNORE_TERM ignore SIGTERM (=1)
//	FAKEBU_EXIT        exit with this code (default 0)
//	FAKEBU_STDOUT      print this on stdout
//	FAKEBU_SIGNAL_SELF end by this signal number instead of exiting
//	FAKEBU_DRIVE       =1: run stdin as a drive script against BU_CDP_WS (see drive)
//	FAKEBU_DAEMON      =1: keep a browser-use-like daemon per BU_NAME (bu-<name>.pid/.sock in BH_RUNTIME_DIR);
//	                   --reload stops it
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"vibebrowser/integration/fakebu/record"
)

func main() {
	reload := len(os.Args) > 1 && os.Args[1] == "--reload"
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	ignoreTerm := os.Getenv("FAKEBU_IGNORE_TERM") == "1"

	pgid, _ := syscall.Getpgid(0)
	rec := record.Call{Args: os.Args[1:], Env: os.Environ(), PID: os.Getpid(), PGID: pgid, At: time.Now()}
	if !reload {
		stdin, _ := io.ReadAll(os.Stdin)
		rec.Stdin = stdin
	}
	save := func() {
		if dir := os.Getenv("FAKEBU_RECORD_DIR"); dir != "" {
			_ = record.Write(dir, rec)
		}
	}
	save() // recorded before sleeping, so a test can see a call that is later killed

	code, _ := strconv.Atoi(os.Getenv("FAKEBU_EXIT"))
	if d, err := time.ParseDuration(os.Getenv("FAKEBU_SLEEP")); err == nil && !reload {
		sleep(d, sigs, ignoreTerm, func(sig os.Signal) {
			rec.Signals = append(rec.Signals, sig.String())
			save()
		})
	}
	if os.Getenv("FAKEBU_DAEMON") == "1" {
		if reload {
			reloadDaemon()
		} else if err := ensureDaemon(); err != nil {
			fmt.Fprintln(os.Stderr, "fakebu: daemon:", err)
			os.Exit(1)
		}
	}
	if os.Getenv("FAKEBU_DRIVE") == "1" && !reload {
		if err := drive(rec.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "fakebu:", err)
			os.Exit(1)
		}
	}
	if out := os.Getenv("FAKEBU_STDOUT"); out != "" {
		fmt.Print(out)
	}
	if n, err := strconv.Atoi(os.Getenv("FAKEBU_SIGNAL_SELF")); err == nil {
		signal.Reset()
		_ = syscall.Kill(os.Getpid(), syscall.Signal(n))
		time.Sleep(time.Second)
	}
	os.Exit(code)
}

// sleep waits d, noting every signal; a signal other than an ignored SIGTERM gets its default action.
func sleep(d time.Duration, sigs chan os.Signal, ignoreTerm bool, note func(os.Signal)) {
	deadline := time.After(d)
	for {
		select {
		case <-deadline:
			return
		case sig := <-sigs:
			note(sig)
			if sig == syscall.SIGTERM && ignoreTerm {
				continue
			}
			signal.Reset(sig.(syscall.Signal))
			_ = syscall.Kill(os.Getpid(), sig.(syscall.Signal))
			time.Sleep(time.Second) // the default action ends the process before this returns
		}
	}
}
