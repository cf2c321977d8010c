package keeper

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// parseArgs reads the argv Command makes into a Config, validated; the run directory is made absolute.
func parseArgs(args []string) (Config, error) {
	fs := flag.NewFlagSet("keep", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is returned, printed once by Main
	var c Config
	fs.StringVar(&c.Key, "key", "", "the browser's key")
	fs.StringVar(&c.RunDir, "run-dir", "", "the home's run/ directory")
	fs.StringVar(&c.Profile, "profile", "", "Chromium's --user-data-dir, absolute")
	fs.IntVar(&c.ForwardPort, "forward-port", 0, "the proxy forwarder's loopback port (its upstream on stdin)")
	fs.StringVar(&c.ForwardStore, "forward-store", "", "the store's name, for the forwarder's error page")
	fs.DurationVar(&c.OrphanStop, "orphan-stop", 0, "stop Chromium after this long without a client (0: never)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return Config{}, errors.New("no Chromium command line: it follows -- (keep --key K --run-dir R --profile P -- BINARY ARGS…)")
	}
	c.Binary, c.Args = rest[0], rest[1:]
	if c.RunDir != "" {
		abs, err := filepath.Abs(c.RunDir)
		if err != nil {
			return Config{}, fmt.Errorf("--run-dir: %w", err)
		}
		c.RunDir = abs
	}
	if err := c.validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// validate checks a Config before anything starts; each error names the rule.
func (c Config) validate() error {
	switch {
	case c.Key == "":
		return errors.New("--key is required: the socket and identity file are named for it")
	case c.Key == "." || c.Key == ".." || strings.ContainsAny(c.Key, "/\x00"):
		return fmt.Errorf("--key %q: a key names files in the run directory, so it holds no '/' and is not '.' or '..'", c.Key)
	case c.RunDir == "":
		return errors.New("--run-dir is required: the socket and identity file go there")
	case c.Profile == "":
		return errors.New("--profile is required: the identity file names the browser's profile")
	case !filepath.IsAbs(c.Profile):
		return fmt.Errorf("--profile %q: must be absolute, as Chromium's --user-data-dir is", c.Profile)
	case c.Binary == "":
		return errors.New("no Chromium binary after --")
	case c.OrphanStop < 0:
		return fmt.Errorf("--orphan-stop %s: want a duration above 0, or none to keep Chromium for the next manager", c.OrphanStop)
	case c.ForwardPort < 0 || c.ForwardPort > 65535:
		return fmt.Errorf("--forward-port %d: want a port from 1 to 65535, or none without a proxy", c.ForwardPort)
	}
	return checkChromiumArgs(c.Args, c.Profile)
}

// checkChromiumArgs holds Chromium's arguments to what a kept browser is: the DevTools pipe speaking JSON,
// no debugging port, and the profile the identity file names.
func checkChromiumArgs(args []string, profile string) error {
	pipe, dataDir := false, ""
	for _, a := range args {
		if a == "--" {
			break // Chromium reads no switch after it
		}
		name, value, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			continue
		}
		switch name {
		case "remote-debugging-pipe":
			if value != "" {
				return fmt.Errorf("chromium's %s: the keeper speaks the pipe's JSON framing (--remote-debugging-pipe), no other", a)
			}
			pipe = true
		case "remote-debugging-port", "remote-debugging-address":
			return fmt.Errorf("chromium's %s: a kept browser has no debugging port, only its pipe (SPEC §13)", a)
		case "user-data-dir":
			dataDir = value
		}
	}
	switch {
	case !pipe:
		return errors.New("chromium's arguments must hold --remote-debugging-pipe: the keeper speaks to it over fds 3 and 4 only")
	case dataDir != profile:
		return fmt.Errorf("chromium's --user-data-dir is %q, the profile is %q: they must be the same, the identity file names it", dataDir, profile)
	}
	return nil
}
