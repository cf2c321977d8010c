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
//	FAKEBU_CALL        =1: make the benchmark's agent call against BU_CDP_WS: connect, createTarget, attach,
//	                   Runtime.evaluate (see agentCall)
//	FAKEBU_DAEMON      =1: keep a browser-use-like daemon per BU_NAME (bu-<name>.pid/.sock in BH_RUNTIME_DIR)
//	FAKEBU_DAEMON_LOG  a file each daemon started is appended to, as "<BU_NAME> <pid>" (the pid file goes when
//	                   the daemon is stopped; this stays)
//	                   with a dedicated tab (bu-<name>.tab, its title); --reload stops it. The daemon is
//	                   ensured before the call's work, as browser_harness does, so a hung call has one
//	FAKEBU_HARNESS     which browser-harness to play: 0.1.9 (the default) or 0.1.12, which, unless
//	                   BH_TAB_MARKER is 0/false/no/off, puts its marker in front of its tab's title (the
//	                   daemon's tab, and with FAKEBU_DRIVE the page's document.title after each open) and
//	                   whose --reload closes the daemon's tab (0.1.9 leaves it open). Both are in the record.
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
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
	h, err := harnessFromEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "fakebu:", err)
		os.Exit(2)
	}
	rec := record.Call{Args: os.Args[1:], Env: os.Environ(), PID: os.Getpid(), PGID: pgid, At: time.Now(), Harness: h.version}
	if !reload {
		stdin, _ := io.ReadAll(os.Stdin)
		rec.Stdin = stdin
	}
	save := func() {
		if dir := os.Getenv("FAKEBU_RECORD_DIR"); dir != "" {
			_ = record.Write(dir, rec)
		}
	}
	save() // recorded before the daemon and the sleep, so a test can see a call that is later killed
	if os.Getenv("FAKEBU_DAEMON") == "1" {
		if reload {
			rec.Tab = reloadDaemon(h)
		} else if rec.Tab, err = ensureDaemon(h); err != nil {
			fmt.Fprintln(os.Stderr, "fakebu: daemon:", err)
			os.Exit(1)
		}
		save()
	}

	code, _ := strconv.Atoi(os.Getenv("FAKEBU_EXIT"))
	if d, err := time.ParseDuration(os.Getenv("FAKEBU_SLEEP")); err == nil && !reload {
		sleep(d, sigs, ignoreTerm, func(sig os.Signal) {
			rec.Signals = append(rec.Signals, sig.String())
			save()
		})
	}
	if os.Getenv("FAKEBU_DRIVE") == "1" && !reload {
		if err := drive(rec.Stdin, os.Stdout, h.marker()); err != nil {
			fmt.Fprintln(os.Stderr, "fakebu:", err)
			os.Exit(1)
		}
	}
	if os.Getenv("FAKEBU_CALL") == "1" && !reload {
		if err := agentCall(os.Stdout); err != nil {
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

// harness is the browser-harness behaviour the fake plays.
type harness struct {
	version    string
	marks      bool // >= 0.1.12: the daemon marks its tab's title unless BH_TAB_MARKER turns it off
	closesTabs bool // >= 0.1.12: shutdown (--reload) closes the daemon's dedicated tab
}

func harnessFromEnv() (harness, error) {
	switch v := os.Getenv("FAKEBU_HARNESS"); v {
	case "", "0.1.9":
		return harness{version: "0.1.9"}, nil
	case "0.1.12":
		return harness{version: v, marks: true, closesTabs: true}, nil
	default:
		return harness{}, fmt.Errorf("FAKEBU_HARNESS=%q; want 0.1.9 or 0.1.12", v)
	}
}

// tabMarker is browser-harness's title marker (0.1.12+: a horse and a space, added once).
const tabMarker = "\U0001F434 "

// marker is what this harness puts in front of a tab's title: "" when it does not mark or BH_TAB_MARKER is
// off (the values browser-harness reads as off).
func (h harness) marker() string {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("BH_TAB_MARKER"))) {
	case "0", "false", "no", "off":
		return ""
	}
	if !h.marks {
		return ""
	}
	return tabMarker
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
