package cli

import (
	"os"
	"path/filepath"
	"strings"

	"vibebrowser/manager/service"
)

// ServiceCmd installs or removes the service that runs `vibe-browser serve`.
type ServiceCmd struct {
	Install   ServiceInstallCmd   `cmd:"" help:"Write the systemd unit (or launchd plist) and print how to start it."`
	Uninstall ServiceUninstallCmd `cmd:"" help:"Remove the systemd unit (or launchd plist) and print how to stop it."`
}

// ServiceInstallCmd writes the service file.
type ServiceInstallCmd struct {
	User bool `help:"A per-user service (systemd --user, in $XDG_CONFIG_HOME/systemd/user) instead of a system one."`
}

// Run writes the unit for this vibe-browser binary and home. The service gets this shell's PATH (so it finds
// browser-use and Chromium as you do) and every VIBE_* knob set now.
func (c *ServiceInstallCmd) Run(g *globals) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if exe, err = filepath.EvalSymlinks(exe); err != nil {
		return err
	}
	env := map[string]string{"PATH": os.Getenv("PATH")}
	for _, kv := range os.Environ() {
		if name, value, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "VIBE_") && name != "VIBE_HOME" {
			env[name] = value
		}
	}
	_, err = service.Install(service.Options{Exe: exe, Home: g.home, User: c.User, Env: env}, g.stdout)
	return err
}

// ServiceUninstallCmd removes the service file.
type ServiceUninstallCmd struct {
	User bool `help:"The per-user service."`
}

// Run removes the unit.
func (c *ServiceUninstallCmd) Run(g *globals) error {
	return service.Uninstall(c.User, g.stdout)
}
