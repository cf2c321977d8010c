package cli

import (
	"errors"
	"os"

	"github.com/rs/zerolog"

	"vibebrowser/manager/config"
)

// ServeCmd runs the manager daemon in the foreground.
type ServeCmd struct {
	LogLevel string `help:"Log level: debug, info, warn, error." default:"info" enum:"debug,info,warn,error"`
}

// Run validates every VIBE_* knob, then runs the daemon until the context ends (the first SIGTERM/SIGINT).
func (c *ServeCmd) Run(g *globals) error {
	getenv := func(name string) string {
		if name == "VIBE_HOME" {
			return g.home
		}
		return os.Getenv(name)
	}
	cfg, err := config.FromEnv(getenv)
	if err != nil {
		return err
	}
	level, _ := zerolog.ParseLevel(c.LogLevel)
	log := zerolog.New(g.stderr).Level(level).With().Timestamp().Logger()
	daemonLog.Store(&log)
	defer daemonLog.Store(nil)
	if g.daemon == nil {
		return errors.New("this binary runs no daemon: run serve with the vibe-browser command")
	}
	return g.daemon(g.ctx, cfg, log, Version)
}
