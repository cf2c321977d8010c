package cli

import (
	"os"

	"github.com/rs/zerolog"

	"vibebrowser/manager"
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
	cfg, err := manager.FromEnv(getenv)
	if err != nil {
		return err
	}
	level, _ := zerolog.ParseLevel(c.LogLevel)
	log := zerolog.New(g.stderr).Level(level).With().Timestamp().Logger()
	daemonLog.Store(&log)
	defer daemonLog.Store(nil)
	return manager.Run(g.ctx, cfg, log, Version)
}
