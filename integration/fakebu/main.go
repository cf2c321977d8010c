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
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Record is what one call saw.
type Record struct {
	Args    []string  `json:"args"`
	Env     []string  `json:"env"`
	Stdin   []byte    `json:"stdin"`
	PID     int       `json:"pid"`
	PGID    int       `json:"pgid"`
	Signals []string  `json:"signals,omitempty"`
	At      time.Time `json:"at"`
}

func main() {
	reload := len(os.Args) > 1 && os.Args[1] == "--reload"
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGHUP, syscall.SIGTERM)
	ignoreTerm := os.Getenv("FAKEBU_IGNORE_TERM") == "1"

	pgid, _ := syscall.Getpgid(0)
	rec := Record{Args: os.Args[1:], Env: os.Environ(), PID: os.Getpid(), PGID: pgid, At: time.Now()}
	if !reload {
		stdin, _ := io.ReadAll(os.Stdin)
		rec.Stdin = stdin
	}
	save := func() {
		dir := os.Getenv("FAKEBU_RECORD_DIR")
		if dir == "" {
			return
		}
		data, _ := json.Marshal(rec)
		name := filepath.Join(dir, fmt.Sprintf("%d-%d.json", rec.At.UnixNano(), rec.PID))
		tmp := name + ".tmp"
		if os.WriteFile(tmp, data, 0o600) == nil {
			_ = os.Rename(tmp, name)
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
