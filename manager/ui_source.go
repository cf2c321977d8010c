package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"vibebrowser/manager/api"
	"vibebrowser/manager/ui"
)

// uiSource is what the web UI reads of the manager (ui.Source): the same status and events the API
// prints, read in-process.
type uiSource struct{ m *Manager }

func (s uiSource) Status(ctx context.Context) (api.Status, error) { return s.m.status(ctx) }

func (s uiSource) Events() []api.Event { return s.m.events.list() }

var _ ui.Source = uiSource{}

// listenUI binds the web UI's address during start-up, so that a taken port stops the start instead of
// leaving a manager without its UI. It returns nil with the UI off.
func listenUI(cfg *Config) (net.Listener, error) {
	if cfg.UIAddr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", cfg.UIAddr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("VIBE_UI_ADDR=%s: the port is in use (another manager's UI, or another program): "+
			"stop it, or set VIBE_UI_ADDR to a free host:port, or to off", cfg.UIAddr)
	}
	if err != nil {
		return nil, fmt.Errorf("VIBE_UI_ADDR=%s: %w", cfg.UIAddr, err)
	}
	return ln, nil
}

// newUI builds the web UI on its bound listener.
func (m *Manager) newUI(ln net.Listener) *ui.Server {
	host, _, _ := net.SplitHostPort(m.cfg.UIAddr)
	return ui.New(ui.Config{Host: host, Port: ln.Addr().(*net.TCPAddr).Port, Source: uiSource{m},
		Log: m.root.With().Str("component", "ui").Logger()})
}
