// Package main stands in for the Ziniao client executable: started in WebDriver mode, it serves the fake Ziniao API.
//
// It takes the real client's flags (--run_type=web_driver --ipc_type=http --port=P) and, like the real
// client started without them (normal mode), serves no API otherwise. Its account and store environments
// come from the environment:
//
//	FAKEZINIAO_ACCOUNT   company/username/password
//	FAKEZINIAO_BROWSERS  comma-separated environments: all digits is a browserId, anything else a browserOauth
//	FAKEZINIAO_PIDFILE   where it writes its pid (optional), so that a test can stop it
//	VIBE_CHROME          the Chromium binary (optional)
//
// It runs until the API's exit action, SIGINT or SIGTERM.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"vibebrowser/integration/fakeziniao"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "fakeziniaoclient: %v\n", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	flags := map[string]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			return fmt.Errorf("unknown argument %q", a)
		}
		flags[name] = value
	}
	if flags["run_type"] != "web_driver" || flags["ipc_type"] != "http" {
		return fmt.Errorf("normal mode (no --run_type=web_driver --ipc_type=http): no HTTP API is served")
	}
	port, err := strconv.Atoi(flags["port"])
	if err != nil || port <= 0 || port > 65535 {
		return fmt.Errorf("--port=%q: want a TCP port", flags["port"])
	}
	account := strings.SplitN(os.Getenv("FAKEZINIAO_ACCOUNT"), "/", 3)
	if len(account) != 3 {
		return fmt.Errorf("FAKEZINIAO_ACCOUNT=%q: want company/username/password", os.Getenv("FAKEZINIAO_ACCOUNT"))
	}
	var browsers []fakeziniao.Browser
	for _, b := range strings.Split(os.Getenv("FAKEZINIAO_BROWSERS"), ",") {
		switch {
		case b == "":
		case strings.Trim(b, "0123456789") == "":
			browsers = append(browsers, fakeziniao.Browser{ID: b, Name: "store " + b})
		default:
			browsers = append(browsers, fakeziniao.Browser{Oauth: b, Name: "store " + b})
		}
	}
	srv, err := fakeziniao.New(fakeziniao.Options{Company: account[0], Username: account[1], Password: account[2],
		Browsers: browsers, Chrome: os.Getenv("VIBE_CHROME"), Port: port,
		Log: zerolog.New(os.Stderr).With().Timestamp().Logger()})
	if err != nil {
		return err
	}
	if pidfile := os.Getenv("FAKEZINIAO_PIDFILE"); pidfile != "" {
		if err := os.WriteFile(pidfile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
			srv.Close()
			return err
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sigs:
	case <-srv.Exited():
	}
	return srv.Close()
}
