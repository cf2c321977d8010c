package manager

import (
	"time"

	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
)

// SetMuxTiming shortens the muxes' keepalive and reconnect timing, for tests that wait for a hung browser to
// be given up on (no knob exists for it).
func SetMuxTiming(c *config.Config, ping, pong, reconnectMin, reconnectMax time.Duration, reconnectTries int) {
	c.MuxTiming = browsers.MuxTiming{PingInterval: ping, PongTimeout: pong, ReconnectMin: reconnectMin,
		ReconnectMax: reconnectMax, ReconnectTries: reconnectTries}
}
