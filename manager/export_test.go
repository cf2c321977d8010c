package manager

import (
	"time"

	"vibebrowser/manager/browsers"
)

// SetMuxTiming shortens the muxes' keepalive and reconnect timing, for tests that wait for a hung browser to
// be given up on (no knob exists for it).
func SetMuxTiming(c *Config, ping, pong, reconnectMin, reconnectMax time.Duration, reconnectTries int) {
	c.muxTiming = browsers.MuxTiming{PingInterval: ping, PongTimeout: pong, ReconnectMin: reconnectMin,
		ReconnectMax: reconnectMax, ReconnectTries: reconnectTries}
}
